package hookjettest_test

import (
	"net/http"
	"testing"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/hookjettest"
)

// PublishKeyed gives the event its ordering key, which the endpoint's POST
// carries; Publish's events carry none. The endpoint is ordered
// (WithSettings), as an application testing ordered delivery would set it.
func TestPublishKeyedSendsTheKey(t *testing.T) {
	rcv := newReceiver(t, http.StatusOK)
	hj := hookjettest.Start(t, hookjettest.WithSettings(func(s *config.Settings) { s.Ordering = config.OrderingKey }))
	ep, secret := hj.AddEndpoint(rcv.URL, "customer.*")
	rcv.expect(secret)
	hj.PublishKeyed("customer-7", "customer.updated", "evt_keyed", []byte(`{}`))
	hj.Publish("customer.updated", "evt_plain", []byte(`{}`))
	hj.WaitDelivered(ep, "evt_keyed")
	hj.WaitDelivered(ep, "evt_plain")
	keys := map[string]string{}
	for _, r := range rcv.requests() {
		keys[r.id] = r.key
	}
	if keys["evt_keyed"] != "customer-7" || keys["evt_plain"] != "" || len(keys) != 2 {
		t.Errorf("Hookjet-Ordering-Key per event: %q, want evt_keyed: customer-7 and none on evt_plain", keys)
	}
}

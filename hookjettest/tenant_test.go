package hookjettest_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/hookjettest"
)

// PublishFor names the event's tenant: a tenant's endpoint gets that
// tenant's events and not those of Publish (without a tenant), which only
// the endpoint without a tenant gets.
func TestPublishForReachesTheTenantsEndpoint(t *testing.T) {
	acme, ops := newReceiver(t, http.StatusOK), newReceiver(t, http.StatusOK)
	secret := hookjettest.NewSecret()
	acme.expect(secret)
	hj := hookjettest.Start(t, hookjettest.WithConfig(func(c *config.Config) {
		c.Endpoints = append(c.Endpoints, config.Endpoint{ID: "acme-crm", URL: acme.URL, Events: []string{"order.*"},
			Tenant: "acme", Secrets: []config.Secret{config.NewSecret(secret)}, Settings: c.Defaults})
	}))
	epOps, s := hj.AddEndpoint(ops.URL, "order.*")
	ops.expect(s)
	hj.Publish("order.created", "evt_none", []byte(`{}`))
	hj.PublishFor("acme", "order.created", "evt_acme", []byte(`{}`))
	hj.WaitDelivered(epOps, "evt_acme")
	hj.WaitDelivered(epOps, "evt_none")
	// The config endpoint is not one WaitDelivered knows: poll its receiver.
	deadline := time.Now().Add(15 * time.Second)
	for len(acme.requests()) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := acme.requests()
	if len(got) != 1 || got[0].id != "evt_acme" {
		t.Errorf("tenant acme's endpoint got %+v, want only evt_acme", got)
	}
}

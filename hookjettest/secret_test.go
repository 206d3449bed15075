package hookjettest_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/hookjet/hookjet/hookjettest"
	"github.com/hookjet/hookjet/webhook"
)

// With the secret chosen first, the receiver verifies
// every request from the start with package webhook, no gate needed, and
// every request it gets verifies.
func TestAddEndpointWithSecretVerifiesFromTheStart(t *testing.T) {
	hj := hookjettest.Start(t)
	secret := hookjettest.NewSecret()
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		t.Fatal(err)
	}
	var verified, refused atomic.Int64
	h := webhook.Handler(v, nil, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		verified.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if rec.Code >= 300 {
			refused.Add(1)
		}
		w.WriteHeader(rec.Code)
	}))
	t.Cleanup(rcv.Close)

	ep := hj.AddEndpointWithSecret(rcv.URL, secret, "order.*")
	hj.Publish("order.created", "evt_1", []byte(`{"order":1}`))
	hj.WaitDelivered(ep, "evt_1")
	if verified.Load() != 1 || refused.Load() != 0 {
		t.Fatalf("%d verified, %d refused; want 1 and 0", verified.Load(), refused.Load())
	}
}

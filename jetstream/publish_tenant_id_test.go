package jetstream

import (
	"testing"

	"github.com/hookjet/hookjet/publish"
)

// TestEventIDsAreOneNamespaceAcrossTenants answers issue 47's unconfirmed
// item "a tenant that chooses an id can suppress another tenant's event":
// confirmed as the contract, not as a silent loss. Nats-Msg-Id is the
// producer's idempotency key in one stream, so two tenants' events with the
// same id are one event: the second is answered as a duplicate of the
// first (its sequence named), never as published, and a producer that
// numbers ids per tenant must prefix them (docs/api.md, "Event ids").
func TestEventIDsAreOneNamespaceAcrossTenants(t *testing.T) {
	js, p := startEvents(t)
	startResponder(t, js, p)
	first, err := PublishRequest(t.Context(), js.Conn(), publish.Event{ID: "invoice_1", Type: "invoice.paid", Data: []byte(`{}`), Tenant: "acme"})
	if err != nil || first.Duplicate {
		t.Fatalf("acme's invoice_1: %+v %v", first, err)
	}
	second, err := PublishRequest(t.Context(), js.Conn(), publish.Event{ID: "invoice_1", Type: "invoice.paid", Data: []byte(`{}`), Tenant: "globex"})
	if err != nil {
		t.Fatal(err)
	}
	if !second.Duplicate || second.Seq != first.Seq {
		t.Errorf("globex's invoice_1 answered %+v: want a duplicate of acme's (#%d), not a new event", second, first.Seq)
	}
	if got := storedEvent(t, js, first.Seq); got.Header.Get(HdrTenant) != "acme" {
		t.Errorf("the stored event's tenant is %q, want acme's", got.Header.Get(HdrTenant))
	}
	scoped, err := PublishRequest(t.Context(), js.Conn(), publish.Event{ID: "globex_invoice_1", Type: "invoice.paid", Data: []byte(`{}`), Tenant: "globex"})
	if err != nil || scoped.Duplicate {
		t.Errorf("globex's prefixed id: %+v %v, want a new event", scoped, err)
	}
}

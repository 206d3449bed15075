package orderservice_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/goleak"

	"github.com/hookjet/hookjet/examples/orderservice"
	"github.com/hookjet/hookjet/hookjettest"
	"github.com/hookjet/hookjet/webhook"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// customer is the customer's webhook endpoint: it accepts only requests
// whose signature verifies with the secret it was given, and keeps them.
type customer struct {
	mu       sync.Mutex
	verifier *webhook.Verifier
	events   []orderservice.Event
	ids      []string
	rejected int
}

func (c *customer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil || c.verifier == nil || c.verifier.Verify(r.Header, body) != nil {
		c.rejected++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	var ev orderservice.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c.events = append(c.events, ev)
	c.ids = append(c.ids, r.Header.Get("webhook-id"))
	w.WriteHeader(http.StatusNoContent)
}

func TestPlacingAnOrderSendsOrderCreatedSigned(t *testing.T) {
	hj := hookjettest.Start(t)

	cust := &customer{}
	srv := httptest.NewServer(cust)
	t.Cleanup(srv.Close)
	ep, secret := hj.AddEndpoint(srv.URL+"/webhooks", "order.*")
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		t.Fatal(err)
	}
	cust.mu.Lock()
	cust.verifier = v
	cust.mu.Unlock()

	// The service connects to NATS as it does in production.
	nc, err := nats.Connect(hj.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	svc, err := orderservice.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	order, err := svc.PlaceOrder(ctx, "cus_1", []orderservice.Item{{SKU: "tea", Quantity: 2}})
	if err != nil {
		t.Fatal(err)
	}

	hj.WaitDelivered(ep, orderservice.EventID(order))

	cust.mu.Lock()
	defer cust.mu.Unlock()
	if cust.rejected != 0 {
		t.Errorf("the customer rejected %d unsigned or badly signed requests", cust.rejected)
	}
	if len(cust.events) != 1 {
		t.Fatalf("the customer got %d events, want 1", len(cust.events))
	}
	got := cust.events[0]
	if got.Type != "order.created" || got.Order.ID != order.ID || got.Order.Customer != "cus_1" || len(got.Order.Items) != 1 {
		t.Errorf("the customer got %+v, want order.created for %s", got, order.ID)
	}
	if cust.ids[0] != orderservice.EventID(order) {
		t.Errorf("webhook-id %q, want %q", cust.ids[0], orderservice.EventID(order))
	}
}

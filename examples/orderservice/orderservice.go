package orderservice

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Item is one line of an order.
type Item struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity"`
}

// Order is a placed order.
type Order struct {
	ID       string    `json:"id"`
	Customer string    `json:"customer"`
	Items    []Item    `json:"items"`
	PlacedAt time.Time `json:"placed_at"`
}

// Event is the webhook payload the service publishes.
type Event struct {
	Type  string `json:"type"`
	Order Order  `json:"order"`
}

// Service places orders and announces them.
type Service struct {
	js natsjs.JetStream
	n  atomic.Int64
}

// New returns a Service that publishes through nc.
func New(nc *nats.Conn) (*Service, error) {
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Service{js: js}, nil
}

// PlaceOrder places an order and publishes order.created with the event id
// "evt_order_<id>", which becomes the webhook-id every delivery carries. It
// returns once JetStream has stored the event: from then on hookjet owns the
// delivery, whatever the customer's endpoint does.
func (s *Service) PlaceOrder(ctx context.Context, customer string, items []Item) (Order, error) {
	o := Order{
		ID:       "ord_" + strconv.FormatInt(s.n.Add(1), 10),
		Customer: customer,
		Items:    items,
		PlacedAt: time.Now().UTC(),
	}
	body, err := json.Marshal(Event{Type: "order.created", Order: o})
	if err != nil {
		return Order{}, err
	}
	if _, err := s.js.Publish(ctx, "hookjet.events.order.created", body, natsjs.WithMsgID(EventID(o))); err != nil {
		return Order{}, fmt.Errorf("publish order.created: %w", err)
	}
	return o, nil
}

// EventID is the id of the order.created event of o.
func EventID(o Order) string { return "evt_order_" + o.ID }

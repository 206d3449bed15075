package dispatch

import (
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/routing"
)

// The stages of the delivery path that need no NATS: match (the pattern
// index, the tenant), shape (the request), settle's decision (TestDecide,
// outcome_test.go).

type installAll struct{}

func (installAll) Install(*config.Endpoint) error { return nil }
func (installAll) Uninstall(string, bool)         {}

// match: an event goes to the endpoints whose patterns match its type,
// within its tenant and those without one; an event whose tenant header is
// not a tenant goes to the operator's endpoints (no tenant) only.
func TestMatchStage(t *testing.T) {
	table := routing.New(installAll{}, nil)
	ep := func(id, tenant string, events ...string) config.Endpoint {
		return config.Endpoint{ID: id, URL: "https://example.com/" + id, Events: events, Tenant: tenant}
	}
	if _, _, err := table.ApplyConfig([]config.Endpoint{
		ep("ops", "", "order.*"),
		ep("acme", "acme", "order.created"),
		ep("globex", "globex", "order.*"),
		ep("all", "acme", ">"),
		ep("invoices", "", "invoice.paid"),
	}); err != nil {
		t.Fatal(err)
	}
	m := matcher{index: table}
	for _, tt := range []struct {
		ev   event
		want []string
	}{
		{event{typ: "order.created", tenant: "acme"}, []string{"acme", "all", "ops"}},
		{event{typ: "order.created", tenant: "globex"}, []string{"globex", "ops"}},
		{event{typ: "order.created"}, []string{"ops"}},
		{event{typ: "order.paid", tenant: "acme"}, []string{"all", "ops"}},
		{event{typ: "invoice.paid", tenant: "initech"}, []string{"invoices"}},
		{event{typ: "order.created", badTenant: "header Hookjet-Tenant names more than one tenant"}, []string{"ops"}},
		{event{typ: "refund.created", tenant: "globex"}, nil},
	} {
		got := m.match(&tt.ev, nil)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("match(%s, tenant %q) = %v, want %v", tt.ev.typ, tt.ev.tenant, got, tt.want)
		}
	}
}

// A stored delivery is checked again against its endpoint when taken: an
// event of another tenant, or one stored for an earlier incarnation of the
// id, is not the endpoint's.
func TestNotForEndpoint(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	ep := &config.Endpoint{ID: "e", Tenant: "acme", CreatedAt: created}
	mine := nats.Header{}
	markIncarnation(mine, created)
	earlier := nats.Header{}
	markIncarnation(earlier, created.Add(-time.Hour))
	for _, tt := range []struct {
		name string
		h    nats.Header
		ev   event
		want bool
	}{
		{"its tenant's event", mine, event{tenant: "acme"}, false},
		{"another tenant's event", mine, event{tenant: "globex"}, true},
		{"an event without a tenant", mine, event{}, true},
		{"a bad tenant header", mine, event{badTenant: "bad"}, true},
		{"an earlier incarnation's task", earlier, event{tenant: "acme"}, true},
		{"a task without the mark", nats.Header{}, event{tenant: "acme"}, false},
	} {
		if got := notForEndpoint(tt.h, &tt.ev, ep); got != tt.want {
			t.Errorf("%s: notForEndpoint = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// shape: the request carries the event as stored.
func TestShapeStage(t *testing.T) {
	h := nats.Header{}
	h.Set(jetstream.HdrContentType, "application/cloudevents+json")
	h.Set(jetstream.HdrOrderingKey, "order-7")
	dl := &delivery{ev: &event{id: "evt_1", typ: "order.created", tenant: "acme"}, hdr: h, data: []byte(`{"n":1}`)}
	req := shape(dl)
	if req.EventID != "evt_1" || req.EventType != "order.created" || req.Tenant != "acme" ||
		req.OrderingKey != "order-7" || req.ContentType != "application/cloudevents+json" || string(req.Payload) != `{"n":1}` {
		t.Fatalf("shape = %+v", req)
	}
	plain := shape(&delivery{ev: &event{id: "evt_2", typ: "t"}, hdr: nats.Header{}, data: []byte("x")})
	if plain.OrderingKey != "" || plain.ContentType != "" || plain.Tenant != "" {
		t.Fatalf("shape of an event without headers = %+v", plain)
	}
}

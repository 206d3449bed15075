package dispatch

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch/opsevent"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/routing"
	"github.com/hookjet/hookjet/transform"
)

// The stages of the delivery path that need no NATS: match (the pattern
// index, the tenant), shape (the request); settle's decision is package
// settle's (TestDecide).

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
		ev   settle.Event
		want []string
	}{
		{settle.Event{Type: "order.created", Tenant: "acme"}, []string{"acme", "all", "ops"}},
		{settle.Event{Type: "order.created", Tenant: "globex"}, []string{"globex", "ops"}},
		{settle.Event{Type: "order.created"}, []string{"ops"}},
		{settle.Event{Type: "order.paid", Tenant: "acme"}, []string{"all", "ops"}},
		{settle.Event{Type: "invoice.paid", Tenant: "initech"}, []string{"invoices"}},
		{settle.Event{Type: "order.created", BadTenant: "header Hookjet-Tenant names more than one tenant"}, []string{"ops"}},
		{settle.Event{Type: "refund.created", Tenant: "globex"}, nil},
	} {
		got := targetIDs(m.match(&tt.ev, nil, nil, nil, nil))
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("match(%s, tenant %q) = %v, want %v", tt.ev.Type, tt.ev.Tenant, got, tt.want)
		}
	}
}

// match: an event of a hookjet.* type goes only where hookjet's mark says
// it is hookjet's, to endpoints whose patterns name hookjet. (never >), of
// its tenant and the operator's, and never to the endpoint it is about.
func TestMatchStageHookjetsOwnEvents(t *testing.T) {
	table := routing.New(installAll{}, nil)
	ep := func(id, tenant string, events ...string) config.Endpoint {
		return config.Endpoint{ID: id, URL: "https://example.com/" + id, Events: events, Tenant: tenant}
	}
	if _, _, err := table.ApplyConfig([]config.Endpoint{
		ep("ops", "", "hookjet.>"),
		ep("all", "", ">"),
		ep("acme-ops", "acme", "hookjet.endpoint.*"),
		ep("globex-ops", "globex", "hookjet.>"),
	}); err != nil {
		t.Fatal(err)
	}
	key := opsevent.NewKey([]byte("0123456789abcdef0123456789abcdef"))
	pub := opsevent.New(opsevent.Options{Key: key})
	marked := func(about, tenant string) (nats.Header, []byte) {
		data := []byte(`{"type":"hookjet.endpoint.disabled","endpoint":{"id":"` + about + `","description":""},"tenant":"` + tenant + `","reason":"gone","count":1,"at":"2026-12-07T01:00:00Z"}`)
		return nats.Header{opsevent.HeaderMark: {key.Mark("e1", opsevent.TypeDisabled, tenant, data)}}, data
	}
	for _, tt := range []struct {
		name          string
		own           ownEvents
		about, tenant string
		forge         bool
		want          []string
	}{
		{"about an acme endpoint", pub, "acme-shop", "acme", false, []string{"acme-ops", "ops"}},
		{"about acme-ops itself", pub, "acme-ops", "acme", false, []string{"ops"}},
		{"about an operator's endpoint", pub, "all", "", false, []string{"ops"}},
		{"forged", pub, "acme-shop", "acme", true, nil},
		{"no publisher", nil, "acme-shop", "acme", false, nil},
	} {
		h, data := marked(tt.about, tt.tenant)
		if tt.forge {
			h = nats.Header{opsevent.HeaderMark: {opsevent.NewKey([]byte("another key")).Mark("e1", opsevent.TypeDisabled, tt.tenant, data)}}
		}
		m := matcher{index: table, own: tt.own}
		got := targetIDs(m.match(&settle.Event{ID: "e1", Type: opsevent.TypeDisabled, Tenant: tt.tenant}, h, data, nil, nil))
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: match = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// shape: the request carries the event as stored; an endpoint's
// transform reshapes it (TestShapeTransforms).
func TestShapeStage(t *testing.T) {
	h := nats.Header{}
	h.Set(jetstream.HdrContentType, "application/cloudevents+json")
	h.Set(jetstream.HdrOrderingKey, "order-7")
	dl := &delivery{Delivery: settle.Delivery{Event: &settle.Event{ID: "evt_1", Type: "order.created", Tenant: "acme"}, Header: h, Data: []byte(`{"n":1}`)}}
	req := storedRequest(dl)
	if req.EventID != "evt_1" || req.EventType != "order.created" || req.Tenant != "acme" ||
		req.OrderingKey != "order-7" || req.ContentType != "application/cloudevents+json" || string(req.Payload) != `{"n":1}` {
		t.Fatalf("shape = %+v", req)
	}
	plain := storedRequest(&delivery{Delivery: settle.Delivery{Event: &settle.Event{ID: "evt_2", Type: "t"}, Header: nats.Header{}, Data: []byte("x")}})
	if plain.OrderingKey != "" || plain.ContentType != "" || plain.Tenant != "" {
		t.Fatalf("shape of an event without headers = %+v", plain)
	}
}

// shape with a transform: the script's payload, content type and headers;
// a throw is an error with its line:column; a cancel is errCancelled; an
// endpoint without a transform costs no engine.
func TestShapeTransforms(t *testing.T) {
	sh := &shaper{security: config.Default().Security, concurrency: 2}
	defer sh.close()
	plain := &delivery{Delivery: settle.Delivery{Event: &settle.Event{ID: "e1", Type: "t"}, Header: nats.Header{}, Data: []byte(`{"n":1}`)}, s: &settings{ep: &config.Endpoint{ID: "p"}}}
	if req, err := sh.shape(t.Context(), plain); err != nil || string(req.Payload) != `{"n":1}` {
		t.Fatalf("without a transform: %s %v", req.Payload, err)
	}
	if sh.scripts != nil {
		t.Fatal("an endpoint without a transform started the transform engine")
	}
	with := func(src string) *delivery {
		s, err := transform.Compile(src)
		if err != nil {
			t.Fatal(err)
		}
		ep := &config.Endpoint{ID: "x", URL: "https://example.com/hook"}
		ep.TransformTimeout = time.Second
		return &delivery{Delivery: settle.Delivery{Event: &settle.Event{ID: "e1", Type: "order.created"}, Header: nats.Header{}, Data: []byte(`{"n":1}`)}, s: &settings{ep: ep, script: s}}
	}
	req, err := sh.shape(t.Context(), with(`function handler(w) { w.payload = {m: w.payload.n + 1}; w.headers["X-Kind"] = w.eventType; return w }`))
	if err != nil || string(req.Payload) != `{"m":2}` || req.Header.Get("X-Kind") != "order.created" {
		t.Fatalf("reshaped: %s %v %v", req.Payload, req.Header, err)
	}
	if _, err := sh.shape(t.Context(), with("function handler(w) {\n  throw new Error('no')\n}")); err == nil || !strings.Contains(err.Error(), "2:") {
		t.Fatalf("a throw: %v, want its line", err)
	}
	if _, err := sh.shape(t.Context(), with(`function handler(w) { w.cancel = true; return w }`)); !errors.Is(err, errCancelled) {
		t.Fatalf("a cancel: %v", err)
	}
}

// match with filters: an endpoint's filter refuses what it does not
// match, and one event's payload is parsed once for every filter.
func TestMatchStageFilters(t *testing.T) {
	table := routing.New(installAll{}, nil)
	if _, _, err := table.ApplyConfig([]config.Endpoint{
		{ID: "a", URL: "https://example.com/a", Events: []string{">"}},
		{ID: "b", URL: "https://example.com/b", Events: []string{">"}},
		{ID: "c", URL: "https://example.com/c", Events: []string{">"}},
	}); err != nil {
		t.Fatal(err)
	}
	compile := func(expr string) *filter.Filter {
		f, err := filter.Compile(expr, filter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	eps := fakeEndpoints{
		"a": {ep: &config.Endpoint{ID: "a"}, filter: compile(`data.total > 100`)},
		"b": {ep: &config.Endpoint{ID: "b"}, filter: compile(`data.missing.deep == 1`)},
		"c": {ep: &config.Endpoint{ID: "c"}},
	}
	metrics := NewMetrics(prometheus.NewRegistry())
	m := matcher{index: table, eps: eps, series: newSeries(metrics, 10)}
	got := targetIDs(m.match(&settle.Event{Type: "order.created", ID: "e"}, nats.Header{}, []byte(`{"total":500}`), nil, nil))
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("match = %v, want a and c (b's filter fails: no match)", got)
	}
	if n := testutil.ToFloat64(metrics.FilterErrors.WithLabelValues("b")); n != 1 {
		t.Fatalf("b's filter errors = %v, want 1", n)
	}
	got = targetIDs(m.match(&settle.Event{Type: "order.created", ID: "e2"}, nats.Header{}, []byte(`{"total":5}`), nil, nil))
	if !slices.Equal(got, []string{"c"}) {
		t.Fatalf("match = %v, want c", got)
	}
}

// fakeEndpoints is an endpointSource of settings alone.
type fakeEndpoints map[string]*settings

func (f fakeEndpoints) endpoint(id string) *endpoint {
	s, ok := f[id]
	if !ok {
		return nil
	}
	e := newEndpoint(id)
	e.set.Store(s)
	return e
}

// targetIDs are the ids of targets.
func targetIDs(targets []target) []string {
	var out []string
	for _, t := range targets {
		out = append(out, t.id)
	}
	return out
}

func (f fakeEndpoints) current(e *endpoint) *settings { return e.set.Load() }

// A replay's request carries its replay number (a broker that dedupes on a
// message id takes it in); a first delivery's is 0.
func TestReplayNumber(t *testing.T) {
	for key, want := range map[string]int{"r1234": 1234, "17": 0, "t5": 0, "d1": 0, "r": 0, "rx": 0} {
		if got := replayOf(key); got != want {
			t.Errorf("replayOf(%q) = %d, want %d", key, got, want)
		}
	}
}

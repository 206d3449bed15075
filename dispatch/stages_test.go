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
	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/routing"
	"github.com/hookjet/hookjet/transform"
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
		got := m.match(&tt.ev, nil, nil, nil)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("match(%s, tenant %q) = %v, want %v", tt.ev.typ, tt.ev.tenant, got, tt.want)
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
		got := m.match(&event{id: "e1", typ: opsevent.TypeDisabled, tenant: tt.tenant}, h, data, nil)
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: match = %v, want %v", tt.name, got, tt.want)
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

// shape: the request carries the event as stored; an endpoint's
// transform reshapes it (TestShapeTransforms).
func TestShapeStage(t *testing.T) {
	h := nats.Header{}
	h.Set(jetstream.HdrContentType, "application/cloudevents+json")
	h.Set(jetstream.HdrOrderingKey, "order-7")
	dl := &delivery{ev: &event{id: "evt_1", typ: "order.created", tenant: "acme"}, hdr: h, data: []byte(`{"n":1}`)}
	req := storedRequest(dl)
	if req.EventID != "evt_1" || req.EventType != "order.created" || req.Tenant != "acme" ||
		req.OrderingKey != "order-7" || req.ContentType != "application/cloudevents+json" || string(req.Payload) != `{"n":1}` {
		t.Fatalf("shape = %+v", req)
	}
	plain := storedRequest(&delivery{ev: &event{id: "evt_2", typ: "t"}, hdr: nats.Header{}, data: []byte("x")})
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
	plain := &delivery{ev: &event{id: "e1", typ: "t"}, hdr: nats.Header{}, data: []byte(`{"n":1}`), s: &settings{ep: &config.Endpoint{ID: "p"}}}
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
		return &delivery{ev: &event{id: "e1", typ: "order.created"}, hdr: nats.Header{}, data: []byte(`{"n":1}`), s: &settings{ep: ep, script: s}}
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
	m := matcher{index: table, eps: eps, series: newSeries(NewMetrics(prometheus.NewRegistry()), 10)}
	got := m.match(&event{typ: "order.created", id: "e"}, nats.Header{}, []byte(`{"total":500}`), nil)
	slices.Sort(got)
	if !slices.Equal(got, []string{"a", "c"}) {
		t.Fatalf("match = %v, want a and c (b's filter fails: no match)", got)
	}
	if n := testutil.ToFloat64(m.series.m.FilterErrors.WithLabelValues("b")); n != 1 {
		t.Fatalf("b's filter errors = %v, want 1", n)
	}
	got = m.match(&event{typ: "order.created", id: "e2"}, nats.Header{}, []byte(`{"total":5}`), nil)
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
	e := &endpoint{id: id}
	e.set.Store(s)
	return e
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

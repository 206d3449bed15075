package dispatch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch/opsevent"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/webhook"
)

// hookjet's own events reach the endpoints subscribed to hookjet.>: the
// operator's endpoint all of them, a tenant's endpoint its tenant's,
// never the endpoint an event is about, never an endpoint on > (which
// still gets the applications' events). Each has the payload DESIGN
// gives and nothing more; dead letters are told once per endpoint and
// minute with their count (the minute is the publisher's clock, moved by
// the test); an event of a hookjet.* type that hookjet did not mark goes
// to no one.
func TestOperationalEventsReachTheirSubscribers(t *testing.T) {
	rc := newOpsReceiver(t)
	ep := func(id, tenant string, events ...string) config.Endpoint {
		e := config.Endpoint{
			ID: id, URL: rc.srv.URL + "/" + id, Events: events, Tenant: tenant, Description: "the " + id + " endpoint",
			Secrets: []config.Secret{config.NewSecret(testSecret)}, Settings: fastSettings(),
		}
		return e
	}
	flaky := ep("globex-flaky", "globex", "invoice.*")
	flaky.Retry.MaxAttempts = 1
	flaky.Breaker.FailureThreshold = 2
	eps := []config.Endpoint{
		ep("ops", "", "hookjet.>"),
		ep("everything", "", ">"),
		ep("acme-ops", "acme", "hookjet.>"),
		ep("globex-ops", "globex", "hookjet.endpoint.*", "hookjet.dead_letter"),
		ep("acme-shop", "acme", "order.created"),
		ep("acme-gone", "acme", "order.paid"),
		flaky,
	}
	rc.answer = map[string]int{"acme-shop": http.StatusBadRequest, "acme-gone": http.StatusGone, "globex-flaky": http.StatusInternalServerError}
	var minutes atomic.Int64
	base := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	r := newOpsRig(t, eps, func() time.Time { return base.Add(time.Duration(minutes.Load()) * time.Minute) })
	started := time.Now().Add(-time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// An operator disables and enables acme-ops: the operator's endpoint
	// hears of both; acme-ops, whose tenant they are, hears of neither.
	if err := r.d.SetDisabled(ctx, "acme-ops", true, "maintenance by bob@example.com"); err != nil {
		t.Fatal(err)
	}
	if err := r.d.SetDisabled(ctx, "acme-ops", false, ""); err != nil {
		t.Fatal(err)
	}
	rc.waitFor(t, "ops", []string{"hookjet.endpoint.disabled acme-ops operator 1", "hookjet.endpoint.enabled acme-ops operator 1"})

	// acme-shop dead-letters three events (400), acme-gone answers 410
	// (dead letter and disabled), globex-flaky fails twice (one attempt
	// each: exhausted) and its breaker opens.
	for i := range 3 {
		r.publish("order.created", fmt.Sprintf("shop-%d", i), "acme", `{"kind":"order","n":1}`)
	}
	r.publish("order.paid", "gone-1", "acme", `{"kind":"order","n":2}`)
	r.publish("invoice.created", "flaky-1", "globex", `{"kind":"invoice","n":3}`)
	r.publish("invoice.created", "flaky-2", "globex", `{"kind":"invoice","n":4}`)
	eventually(t, "the dead letters are stored", 15*time.Second, func() bool {
		return len(r.deadLetters("acme-shop")) == 3 && len(r.deadLetters("acme-gone")) == 1 && len(r.deadLetters("globex-flaky")) == 2
	})
	rc.waitFor(t, "ops", []string{"hookjet.endpoint.disabled acme-gone gone 1", "hookjet.endpoint.breaker_opened globex-flaky failures 1"})
	if err := r.d.Operator().ResetBreaker(ctx, "globex-flaky"); err != nil {
		t.Fatal(err)
	}
	rc.waitFor(t, "ops", []string{"hookjet.endpoint.breaker_closed globex-flaky reset 1"})
	if got := rc.of("ops", opsevent.TypeDeadLetter); len(got) != 0 {
		t.Fatalf("dead letters told before their minute is over: %v", got)
	}

	// The minute is over: one event per endpoint that dead-lettered, with
	// the minute's count. Two more dead letters in the next minute make one
	// more event.
	minutes.Add(1)
	rc.waitFor(t, "ops", []string{
		"hookjet.dead_letter acme-shop permanent 3", "hookjet.dead_letter acme-gone gone 1", "hookjet.dead_letter globex-flaky exhausted 2",
	})
	r.publish("order.created", "shop-3", "acme", `{"kind":"order","n":5}`)
	r.publish("order.created", "shop-4", "acme", `{"kind":"order","n":6}`)
	eventually(t, "the next minute's dead letters are stored", 15*time.Second, func() bool { return len(r.deadLetters("acme-shop")) == 5 })
	minutes.Add(1)
	rc.waitFor(t, "ops", []string{"hookjet.dead_letter acme-shop permanent 2"})

	// An application's plain NATS publish of a hookjet.* type, even with a
	// mark, is delivered to no one.
	forged := nats.NewMsg(jetstream.EventsPrefix + opsevent.TypeDisabled)
	forged.Header.Set(jetstream.HdrMsgID, "forged")
	forged.Header.Set(opsevent.HeaderMark, "v1,"+strings.Repeat("A", 44))
	forged.Data = []byte(`{"type":"hookjet.endpoint.disabled","endpoint":{"id":"acme-shop","description":""},"tenant":"","reason":"gone","count":1,"at":"2026-12-07T01:00:00Z"}`)
	if _, err := r.node.JetStream().PublishMsg(ctx, forged); err != nil {
		t.Fatal(err)
	}
	r.settled(15 * time.Second) // the forged event too: acked once its deliveries (none) are settled

	all := []string{
		"hookjet.endpoint.disabled acme-ops operator 1", "hookjet.endpoint.enabled acme-ops operator 1",
		"hookjet.endpoint.disabled acme-gone gone 1",
		"hookjet.endpoint.breaker_opened globex-flaky failures 1", "hookjet.endpoint.breaker_closed globex-flaky reset 1",
		"hookjet.dead_letter acme-shop permanent 3", "hookjet.dead_letter acme-gone gone 1", "hookjet.dead_letter globex-flaky exhausted 2",
		"hookjet.dead_letter acme-shop permanent 2",
	}
	rc.exactly(t, "ops", all)
	rc.exactly(t, "acme-ops", []string{ // acme's, not those about acme-ops itself
		"hookjet.endpoint.disabled acme-gone gone 1",
		"hookjet.dead_letter acme-shop permanent 3", "hookjet.dead_letter acme-gone gone 1", "hookjet.dead_letter acme-shop permanent 2",
	})
	rc.exactly(t, "globex-ops", []string{
		"hookjet.endpoint.breaker_opened globex-flaky failures 1", "hookjet.endpoint.breaker_closed globex-flaky reset 1",
		"hookjet.dead_letter globex-flaky exhausted 2",
	})
	if got := slices.Sorted(slices.Values(rc.types("everything"))); !slices.Equal(got, []string{"invoice", "order"}) {
		t.Fatalf("the endpoint on > got types %v, want the applications' events only", got)
	}
	rc.check(t, base)

	// Redelivery reads the stream by the endpoint's patterns: the same
	// rules hold (> takes the applications' 8 events only; acme-ops its
	// tenant's 4 hookjet events not about itself, not the forged one).
	for id, want := range map[string]int{"everything": 8, "acme-ops": 4, "globex-ops": 3} {
		matched, _, err := r.d.Operator().Redeliver(ctx, id, started, time.Time{}, true)
		if err != nil || matched != want {
			t.Errorf("redelivery to %s matched %d (%v), want %d", id, matched, err, want)
		}
	}
}

// newOpsRig starts an engine delivering to eps that publishes hookjet's
// own events, with clock as the publisher's.
func newOpsRig(t *testing.T, eps []config.Endpoint, clock func() time.Time) *rig {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.Security.AllowPrivateNetworks = true
	cfg.Defaults = fastSettings()
	cfg.Endpoints = eps
	node, err := jetstream.OpenNode(cfg.NATS, cfg.DataDir, "dispatch-test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node.CloseConn(time.Second, slog.New(slog.DiscardHandler))
		node.Shutdown()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := jetstream.EnsureStreams(ctx, node.JetStream(), &cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	pub := opsevent.New(opsevent.Options{Store: node.JetStream(), Key: opsevent.NewKey(bytes.Repeat([]byte{7}, 32)), Now: clock})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pub.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done }) // after the engine stops
	return startEngine(t, node, &cfg, false, func(o *Options) { o.Operational = pub })
}

// opsReceiver is every endpoint's receiver: it verifies each request with
// the webhook package, answers each path's status (204 when none), and
// keeps what it answered 2xx.
type opsReceiver struct {
	srv    *httptest.Server
	v      *webhook.Verifier
	answer map[string]int // set before the engine starts

	mu     sync.Mutex
	bodies map[string][]string // path -> bodies taken
	ids    map[string][]string // path -> their webhook-ids
	bad    []string
}

func newOpsReceiver(t *testing.T) *opsReceiver {
	t.Helper()
	v, err := webhook.NewVerifier([]string{testSecret})
	if err != nil {
		t.Fatal(err)
	}
	rc := &opsReceiver{v: v, bodies: map[string][]string{}, ids: map[string][]string{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		path := strings.TrimPrefix(req.URL.Path, "/")
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if err := rc.v.Verify(req.Header, body); err != nil {
			rc.bad = append(rc.bad, path+": "+err.Error())
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if st := rc.answer[path]; st != 0 {
			w.WriteHeader(st)
			return
		}
		rc.bodies[path] = append(rc.bodies[path], string(body))
		rc.ids[path] = append(rc.ids[path], req.Header.Get("webhook-id"))
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

// of returns path's operational events of typ as "type endpoint reason
// count", sorted.
func (rc *opsReceiver) of(path, typ string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, b := range rc.bodies[path] {
		var p opsevent.Payload
		if json.Unmarshal([]byte(b), &p) == nil && config.IsOperational(p.Type) && (typ == "" || p.Type == typ) {
			out = append(out, fmt.Sprintf("%s %s %s %d", p.Type, p.Endpoint.ID, p.Reason, p.Count))
		}
	}
	slices.Sort(out)
	return out
}

// types returns the first token of every event type path took, once
// each: the body's "type" for hookjet's own events, its "kind" for the
// applications' (the test's bodies say their type).
func (rc *opsReceiver) types(path string) []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, b := range rc.bodies[path] {
		var p struct {
			Type string `json:"type"`
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal([]byte(b), &p)
		tok := p.Kind
		if p.Type != "" {
			tok, _, _ = strings.Cut(p.Type, ".")
		}
		if !slices.Contains(out, tok) {
			out = append(out, tok)
		}
	}
	return out
}

// waitFor waits until path has taken every event of want.
func (rc *opsReceiver) waitFor(t *testing.T, path string, want []string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s gets %v", path, want), 20*time.Second, func() bool {
		got := rc.of(path, "")
		for _, w := range want {
			if !slices.Contains(got, w) {
				return false
			}
		}
		return true
	})
}

// exactly fails unless path took the operational events want and no
// other.
func (rc *opsReceiver) exactly(t *testing.T, path string, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	if got := rc.of(path, ""); !slices.Equal(got, want) {
		t.Errorf("%s got %q, want %q", path, got, want)
	}
}

// check fails on a request that did not verify, and on a payload that is
// not exactly {"type", "endpoint": {"id", "description"}, "tenant",
// "reason", "count", "at"} with the endpoint's tenant and description and
// no URL; a dead letter's at is its minute.
func (rc *opsReceiver) check(t *testing.T, base time.Time) {
	t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		t.Fatalf("requests that did not verify: %v", rc.bad)
	}
	tenants := map[string]string{"acme-ops": "acme", "acme-gone": "acme", "acme-shop": "acme", "globex-flaky": "globex"}
	n := 0
	for _, b := range rc.bodies["ops"] {
		n++
		var raw map[string]json.RawMessage
		if err := json.Unmarshal([]byte(b), &raw); err != nil {
			t.Fatal(err)
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range raw {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(keys, []string{"at", "count", "endpoint", "reason", "tenant", "type"}) {
			t.Errorf("payload keys %v: %s", keys, b)
		}
		var p opsevent.Payload
		_ = json.Unmarshal([]byte(b), &p)
		if p.Tenant != tenants[p.Endpoint.ID] || p.Endpoint.Description != "the "+p.Endpoint.ID+" endpoint" {
			t.Errorf("payload names the wrong tenant or description: %s", b)
		}
		if strings.Contains(b, rc.srv.URL) || strings.Contains(b, "bob@example.com") {
			t.Errorf("payload shows a URL or the operator's reason: %s", b)
		}
		if p.Type == opsevent.TypeDeadLetter && (p.At.Before(base) || !p.At.Equal(p.At.Truncate(time.Minute))) {
			t.Errorf("a dead letter's at is not its minute: %s", b)
		}
	}
	if n == 0 {
		t.Fatal("ops took nothing")
	}
	// A dead letter's id is its endpoint and minute, the same in every
	// process.
	for _, id := range []string{"hookjet.dead_letter:acme-shop:20261207T0100Z", "hookjet.dead_letter:acme-shop:20261207T0101Z"} {
		if !slices.Contains(rc.ids["ops"], id) {
			t.Errorf("no event %s among %v", id, rc.ids["ops"])
		}
	}
}

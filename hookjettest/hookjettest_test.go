package hookjettest_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/hookjettest"
	"github.com/hookjet/hookjet/webhook"
)

// request is what a receiver got.
type request struct {
	id, typ string
	body    []byte
	key     string // Hookjet-Ordering-Key
}

// receiver is an endpoint as an application's customer would run it: it
// verifies every signature with the endpoint's secret and answers status.
type receiver struct {
	*httptest.Server
	t      *testing.T
	v      *webhook.Verifier
	status int
	mu     sync.Mutex
	got    []request
}

func newReceiver(t *testing.T, status int) *receiver {
	r := &receiver{t: t, status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

// expect sets the secret the receiver verifies with.
func (r *receiver) expect(secret string) {
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		r.t.Fatal(err)
	}
	r.mu.Lock()
	r.v = v
	r.mu.Unlock()
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.t.Errorf("receiver: read body: %v", err)
		return
	}
	r.mu.Lock()
	v := r.v
	r.got = append(r.got, request{id: req.Header.Get("webhook-id"), typ: typeOf(body), body: body, key: req.Header.Get("Hookjet-Ordering-Key")})
	r.mu.Unlock()
	if v == nil {
		r.t.Errorf("receiver: a request before the secret was known")
	} else if err := v.Verify(req.Header, body); err != nil {
		r.t.Errorf("receiver: signature: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	w.WriteHeader(r.status)
}

func typeOf(body []byte) string {
	_, after, _ := strings.Cut(string(body), `"type":"`)
	typ, _, _ := strings.Cut(after, `"`)
	return typ
}

func (r *receiver) requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.got...)
}

func TestPublishedEventIsDeliveredSigned(t *testing.T) {
	hj := hookjettest.Start(t)
	rcv := newReceiver(t, http.StatusNoContent)
	ep, secret := hj.AddEndpoint(rcv.URL+"/hooks", "order.*")
	if !strings.HasPrefix(secret, "whsec_") || ep == "" {
		t.Fatalf("AddEndpoint = %q, %q", ep, secret)
	}
	rcv.expect(secret)

	payload := []byte(`{"type":"order.created","order":42}`)
	hj.Publish("order.created", "evt_1", payload)
	hj.WaitDelivered(ep, "evt_1")

	got := rcv.requests()
	if len(got) != 1 || got[0].id != "evt_1" || !bytes.Equal(got[0].body, payload) {
		t.Fatalf("receiver got %+v, want one evt_1 with the payload", got)
	}
	if dls := hj.DeadLetters(""); len(dls) != 0 {
		t.Errorf("dead letters: %+v", dls)
	}
}

// TestFailingEndpointEndsInDeadLetters: an endpoint that always answers 503
// gets max_attempts attempts, then the event is in the DLQ with the reason.
func TestFailingEndpointEndsInDeadLetters(t *testing.T) {
	hj := hookjettest.Start(t, hookjettest.WithRetry(2, 100*time.Millisecond))
	rcv := newReceiver(t, http.StatusServiceUnavailable)
	ep, secret := hj.AddEndpoint(rcv.URL)
	rcv.expect(secret)

	hj.Publish("invoice.paid", "evt_dlq", []byte(`{"type":"invoice.paid"}`))
	d := hj.WaitDeadLetter(ep, "evt_dlq")
	if d.Reason != "exhausted" || d.Attempts != 2 || d.LastStatus != 503 || d.EventType != "invoice.paid" || d.Endpoint != ep {
		t.Errorf("dead letter = %+v, want exhausted after 2 attempts with 503", d)
	}
	if d.FirstAttempt.IsZero() || d.LastAttempt.Before(d.FirstAttempt) {
		t.Errorf("attempt times %v .. %v", d.FirstAttempt, d.LastAttempt)
	}
	if n := len(rcv.requests()); n != 2 {
		t.Errorf("receiver got %d requests, want exactly 2 (max_attempts)", n)
	}
	if all := hj.DeadLetters(""); len(all) != 1 || all[0].EventID != "evt_dlq" {
		t.Errorf("DeadLetters(\"\") = %+v", all)
	}
	if other := hj.DeadLetters("nope"); len(other) != 0 {
		t.Errorf("DeadLetters of another endpoint = %+v", other)
	}
}

// TestEndpointsGetOnlyTheirEvents: two endpoints, one subscribed to order.*;
// once the catch-all endpoint has user.created, hookjet has routed it, and
// the order endpoint never saw it.
func TestEndpointsGetOnlyTheirEvents(t *testing.T) {
	hj := hookjettest.Start(t)
	orders, all := newReceiver(t, http.StatusOK), newReceiver(t, http.StatusOK)
	epOrders, s1 := hj.AddEndpoint(orders.URL, "order.*")
	epAll, s2 := hj.AddEndpoint(all.URL)
	orders.expect(s1)
	all.expect(s2)
	if epOrders == epAll || s1 == s2 {
		t.Fatalf("two endpoints share an id or a secret: %s %s", epOrders, epAll)
	}
	hj.Publish("user.created", "evt_user", []byte(`{"type":"user.created"}`))
	hj.Publish("order.shipped", "evt_order", []byte(`{"type":"order.shipped"}`))
	hj.WaitDelivered(epAll, "evt_user")
	hj.WaitDelivered(epAll, "evt_order")
	hj.WaitDelivered(epOrders, "evt_order")
	for _, r := range orders.requests() {
		if r.id != "evt_order" {
			t.Errorf("order endpoint got %s (%s)", r.id, r.typ)
		}
	}
}

// TestApplicationClientOnNATSURL publishes as an application does: its own
// NATS client over TCP to NATSURL.
func TestApplicationClientOnNATSURL(t *testing.T) {
	hj := hookjettest.Start(t)
	rcv := newReceiver(t, http.StatusAccepted)
	ep, secret := hj.AddEndpoint(rcv.URL)
	rcv.expect(secret)

	if !strings.HasPrefix(hj.NATSURL(), "nats://127.0.0.1:") {
		t.Fatalf("NATSURL = %q", hj.NATSURL())
	}
	nc, err := nats.Connect(hj.NATSURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := js.Publish(ctx, "hookjet.events.app.ping", []byte(`{"type":"app.ping"}`), natsjs.WithMsgID("evt_app")); err != nil {
		t.Fatal(err)
	}
	hj.WaitDelivered(ep, "evt_app")
}

// fakeTB is a testing.T whose Fatalf, once armed, records the message and
// ends the calling goroutine as testing.T's does, instead of failing the test.
type fakeTB struct {
	*testing.T
	mu    sync.Mutex
	armed bool
	fatal string
}

func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	armed := f.armed
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	if !armed {
		f.T.Fatalf(format, args...)
	}
	runtime.Goexit()
}

// fatalOf runs fn on a goroutine of its own with f armed and returns the
// message fn failed with ("" when it returned).
func fatalOf(f *fakeTB, fn func()) string {
	f.mu.Lock()
	f.armed, f.fatal = true, ""
	f.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	<-done
	f.mu.Lock()
	defer f.mu.Unlock()
	f.armed = false
	return f.fatal
}

// TestWaitsFailWithTheReason: waiting for the delivery of an event that the
// endpoint rejected fails at once with the dead letter's reason and status,
// long before the timeout; waiting for the dead letter of a delivered event
// fails too, and so does waiting on an endpoint that does not exist.
func TestWaitsFailWithTheReason(t *testing.T) {
	f := &fakeTB{T: t}
	hj := hookjettest.Start(f, hookjettest.WithTimeout(time.Minute))
	bad, good := newReceiver(t, http.StatusBadRequest), newReceiver(t, http.StatusOK)
	epBad, s1 := hj.AddEndpoint(bad.URL, "order.*")
	epGood, s2 := hj.AddEndpoint(good.URL, "user.*")
	bad.expect(s1)
	good.expect(s2)
	hj.Publish("order.created", "evt_bad", []byte(`{"type":"order.created"}`))
	hj.Publish("user.created", "evt_good", []byte(`{"type":"user.created"}`))

	start := time.Now()
	msg := fatalOf(f, func() { hj.WaitDelivered(epBad, "evt_bad") })
	for _, want := range []string{"dead-lettered", "permanent", "400", epBad} {
		if !strings.Contains(msg, want) {
			t.Errorf("WaitDelivered failed with %q, want it to name %q", msg, want)
		}
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("WaitDelivered took %s to fail", took)
	}
	hj.WaitDelivered(epGood, "evt_good")
	if msg := fatalOf(f, func() { hj.WaitDeadLetter(epGood, "evt_good") }); !strings.Contains(msg, "was delivered") {
		t.Errorf("WaitDeadLetter of a delivered event failed with %q", msg)
	}
	if msg := fatalOf(f, func() { hj.WaitDelivered("ep99", "evt_good") }); !strings.Contains(msg, `no endpoint "ep99"`) {
		t.Errorf("WaitDelivered of an unknown endpoint failed with %q", msg)
	}
}

// TestTwoInstancesAreIndependent: each Start has its own NATS, ports and
// state, so tests can run in parallel.
func TestTwoInstancesAreIndependent(t *testing.T) {
	a, b := hookjettest.Start(t), hookjettest.Start(t)
	if a.NATSURL() == b.NATSURL() || a.AdminURL() == b.AdminURL() {
		t.Fatalf("instances share %s / %s", a.NATSURL(), a.AdminURL())
	}
	rcv := newReceiver(t, http.StatusOK)
	ep, secret := a.AddEndpoint(rcv.URL)
	rcv.expect(secret)
	epB, secretB := b.AddEndpoint(rcv.URL + "/b")
	if ep != epB || secret == secretB {
		t.Fatalf("ids %s/%s (want the same per-instance numbering), secrets equal: %v", ep, epB, secret == secretB)
	}
	a.Publish("x.y", "evt_a", []byte(`{}`))
	a.WaitDelivered(ep, "evt_a")
	if dls := b.DeadLetters(""); len(dls) != 0 {
		t.Errorf("b has dead letters %+v", dls)
	}
}

// scopedTB runs its cleanups when asked, so that a benchmark stops each
// hookjet before starting the next.
type scopedTB struct {
	*testing.B
	cleanups []func()
}

func (s *scopedTB) Cleanup(fn func()) { s.cleanups = append(s.cleanups, fn) }

func (s *scopedTB) stop() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// BenchmarkStart measures Start after the first one of the binary (which
// pays for one-time set-up); each hookjet is stopped outside the timing.
func BenchmarkStart(b *testing.B) {
	first := &scopedTB{B: b}
	hookjettest.Start(first)
	first.stop()
	for b.Loop() {
		tb := &scopedTB{B: b}
		hookjettest.Start(tb)
		b.StopTimer()
		tb.stop()
		b.StartTimer()
	}
}

package test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
	hjs "github.com/hookjet/hookjet/jetstream"
	hjserver "github.com/hookjet/hookjet/server"
)

// Regression tests for engine defects found in review, named by behaviour.

// Item 1: a process whose config lacks an endpoint (here: no endpoints at
// all, as `HOOKJET_NATS_URL=... hookjet serve` without --config) shares the
// fan-out with the process that has it, and neither loses an event for it
// nor deletes anything of it.
func TestProcessWithoutTheEndpointLosesNothing(t *testing.T) {
	ns := startNATSNode(t, "own", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfgA := testConfig(t, t.TempDir(), "", endpointYAML{ID: "a", URL: r.URL, Events: []string{"order.*"}})
	cfgA.NATS.URL = ns.url()
	a := startHookjet(t, cfgA, cli.Options{})
	cfgB := testConfig(t, t.TempDir(), "")
	cfgB.NATS.URL = ns.url()
	b := startHookjet(t, cfgB, cli.Options{})
	checkFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if code := b.api("GET", "/api/v1/endpoints/a", "", nil, nil); code != http.StatusOK {
			return fmt.Errorf("the process without the endpoint does not know it: HTTP %d", code)
		}
		return nil
	})
	const n = 60
	for i := range n {
		a.publish("order.created", fmt.Sprintf("evt_own_%02d", i), []byte(`{}`))
	}
	for i := range n {
		r.waitFor(t, fmt.Sprintf("evt_own_%02d", i))
	}
	a.settle("order.created", r)
	if dups := r.count() - r.distinct(); dups != 0 {
		t.Fatalf("%d duplicates", dups)
	}
	var st struct {
		Disabled bool `json:"disabled"`
	}
	if code := a.api("GET", "/api/v1/endpoints/a", "", nil, &st); code != http.StatusOK || st.Disabled {
		t.Fatalf("the owner's endpoint after the other process ran: HTTP %d, disabled %v", code, st.Disabled)
	}
}

// Item 3: a disabled endpoint's waiting deliveries expire into the DLQ as
// "expired" at retry.max_age instead of sitting in the stream for days.
func TestDisabledBacklogExpires(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "off", URL: r.URL,
		Extra: "    retry: {max_age: 2s}\n"}), cli.Options{})
	if code := h.api("POST", "/api/v1/endpoints/off/disable", "", nil, nil); code != http.StatusOK {
		t.Fatalf("disable: HTTP %d", code)
	}
	for i := range 3 {
		h.publish("order.created", fmt.Sprintf("evt_exp_%d", i), []byte(`{}`))
	}
	var dl []dlqEntry
	checkFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if dl = h.dlq("?endpoint=off"); len(dl) != 3 {
			return fmt.Errorf("%d dead letters", len(dl))
		}
		return nil
	})
	for _, e := range dl {
		if e.Reason != "expired" || e.Attempts != 0 {
			t.Fatalf("dead letter %+v", e)
		}
	}
	waitSettled(t, h.js, "off", 10*time.Second)
	if r.count() != 0 {
		t.Fatalf("a disabled endpoint got %d requests", r.count())
	}
}

// Item 4: while an endpoint is held (Retry-After), its events wait as tasks:
// nothing is naked, so no JetStream delivery is spent without an attempt.
func TestHoldSpendsNoDeliveries(t *testing.T) {
	var first atomic.Bool
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		if first.CompareAndSwap(false, true) {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "held", URL: r.URL,
		Extra: "    retry: {cap: 10s}\n"}), cli.Options{})
	h.publish("order.created", "evt_hold_0", []byte(`{}`))
	var held time.Time
	checkFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		e := h.endpoint("held")
		if e.HeldUntil == nil {
			return fmt.Errorf("not held yet")
		}
		held = e.HeldUntil.Add(-2 * time.Second)
		return nil
	})
	for i := 1; i <= 20; i++ {
		h.publish("order.created", fmt.Sprintf("evt_hold_%d", i), []byte(`{}`))
	}
	for i := 0; i <= 20; i++ {
		r.waitFor(t, fmt.Sprintf("evt_hold_%d", i))
	}
	for _, d := range r.deliveries() {
		if d.ID != "evt_hold_0" && d.At.Before(held.Add(2*time.Second)) {
			t.Fatalf("%s was sent %s into a 2 s hold", d.ID, d.At.Sub(held))
		}
	}
	c, err := h.js.Consumer(t.Context(), hjs.EventsStream, "hookjet-fanout")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := c.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if ci.NumRedelivered != 0 {
		t.Fatalf("the fan-out redelivered %d events during the hold", ci.NumRedelivered)
	}
}

// Item 6: deleting an API endpoint removes its disabled state, so the id
// created again starts enabled.
func TestRecreatedEndpointStartsEnabled(t *testing.T) {
	in := newInbox(t)
	h := startHookjet(t, testConfig(t, t.TempDir(), ""), cli.Options{})
	body := `{"id":"again","url":"` + in.URL + `"}`
	if code, _, out := h.call("POST", "/api/v1/endpoints", body); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, out)
	}
	h.applied("again")
	if code := h.api("POST", "/api/v1/endpoints/again/disable", "", nil, nil); code != http.StatusOK {
		t.Fatalf("disable: HTTP %d", code)
	}
	if code, _, _ := h.call("DELETE", "/api/v1/endpoints/again", ""); code != http.StatusNoContent {
		t.Fatalf("delete: HTTP %d", code)
	}
	checkFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if code := h.api("GET", "/api/v1/endpoints/again", "", nil, nil); code != http.StatusNotFound {
			return fmt.Errorf("HTTP %d", code)
		}
		return nil
	})
	if code, _, out := h.call("POST", "/api/v1/endpoints", body); code != http.StatusCreated {
		t.Fatalf("create again: %d %v", code, out)
	}
	h.applied("again")
	h.publish("order.created", "evt_again", []byte(`{}`))
	in.wait(t, "evt_again", 1)
}

// Item 11: started against a NATS whose JetStream does not answer yet,
// hookjet does not give up: /healthz answers, /readyz is 503 and says what
// it waits for, and once JetStream answers it comes up and delivers.
func TestStartWaitsForJetStream(t *testing.T) {
	var jsOn atomic.Bool
	base := standaloneNATS(t)
	ns := startNATSNode(t, "late", func() *server.Options {
		o := base()
		o.JetStream = jsOn.Load()
		return o
	})
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "late", URL: r.URL})
	cfg.NATS.URL = ns.url()
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg.Admin.Listen = adminAddr
	type started struct {
		srv *hjserver.Server
		err error
	}
	done := make(chan started, 1)
	go func() {
		srv, err := cli.Start(t.Context(), cfg, cli.Options{Log: slog.New(slog.NewTextHandler(tLogWriter{t}, nil))})
		done <- started{srv, err}
	}()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + adminAddr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if code, body := get("/readyz"); code != http.StatusServiceUnavailable || !strings.Contains(body, "starting: creating streams") {
			return fmt.Errorf("/readyz while JetStream is off: %d %s", code, body)
		}
		return nil
	})
	if code, _ := get("/healthz"); code != http.StatusOK {
		t.Fatalf("/healthz while starting: %d", code)
	}
	select {
	case s := <-done:
		t.Fatalf("start-up returned while JetStream was off: %v", s.err)
	default:
	}
	ns.shutdown()
	jsOn.Store(true)
	ns.start()
	var s started
	select {
	case s = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("hookjet did not come up after JetStream did")
	}
	if s.err != nil {
		t.Fatalf("start: %v", s.err)
	}
	t.Cleanup(func() {
		if err := s.srv.Shutdown(); err != nil {
			t.Error(err)
		}
	})
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("/readyz after start-up: %d %s", code, body)
	}
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	if _, err := js.Publish(t.Context(), "hookjet.events.order.created", []byte(`{}`), natsjs.WithMsgID("evt_late")); err != nil {
		t.Fatal(err)
	}
	r.waitFor(t, "evt_late")
}

// An API endpoint whose id the config file takes over on a reload is back
// in force when a later reload drops the id from the file: its events are
// not acked with no endpoint to go to.
func TestReloadGivesAShadowedAPIEndpointBack(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	base := testConfig(t, dir, "", endpointYAML{ID: "file", URL: r.URL, Events: []string{"other.*"}})
	h := startHookjet(t, base, cli.Options{})
	h.createAPIEndpoint("x1", r.URL, "order.*")
	h.publish("order.created", "evt_shadow_1", []byte(`{}`))
	r.waitFor(t, "evt_shadow_1")

	withX1 := testConfig(t, dir, "", endpointYAML{ID: "file", URL: r.URL, Events: []string{"other.*"}},
		endpointYAML{ID: "x1", URL: r.URL, Events: []string{"lead.*"}})
	if err := h.srv.Reload(t.Context(), withX1); err != nil {
		t.Fatal(err)
	}
	if err := h.srv.Reload(t.Context(), base); err != nil {
		t.Fatal(err)
	}
	if code := h.api("GET", "/api/v1/endpoints/x1", "", nil, nil); code != http.StatusOK {
		t.Fatalf("x1 after the file dropped it: HTTP %d", code)
	}
	h.publish("order.created", "evt_shadow_3", []byte(`{}`))
	r.waitFor(t, "evt_shadow_3")
}

// A delivery in flight when its API endpoint is deleted stores no retry:
// nothing would take it, and an endpoint created again with the id would.
func TestDeletedAPIEndpointKeepsNoRetry(t *testing.T) {
	var inFlight atomic.Bool
	release := make(chan struct{})
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		inFlight.Store(true)
		<-release
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "file", URL: r.URL, Events: []string{"other.*"}}), cli.Options{})
	h.createAPIEndpoint("gone1", r.URL, "order.*")
	h.publish("order.created", "evt_gone_1", []byte(`{}`))
	checkFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if !inFlight.Load() {
			return fmt.Errorf("no request yet")
		}
		return nil
	})
	if code := h.api("DELETE", "/api/v1/endpoints/gone1", "", nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: HTTP %d", code)
	}
	checkFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if code := h.api("GET", "/api/v1/endpoints/gone1", "", nil, nil); code != http.StatusNotFound {
			return fmt.Errorf("gone1 still known: HTTP %d", code)
		}
		return nil
	})
	close(release) // the 503 comes back after the delete
	fanoutSettledWithin(t, h, 10*time.Second)
	st, err := h.js.Stream(t.Context(), hjs.TasksStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context(), natsjs.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	for subj, n := range info.State.Subjects {
		if strings.Contains(subj, "gone1") {
			t.Fatalf("%d message(s) on %s after the endpoint was deleted", n, subj)
		}
	}
}

// fanoutSettledWithin waits until the fan-out consumer has nothing pending
// or awaiting an ack.
func fanoutSettledWithin(t *testing.T, h *hookjet, timeout time.Duration) {
	t.Helper()
	checkFor(t, timeout, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		return fanoutSettled(ctx, h.js)
	})
}

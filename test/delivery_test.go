package test

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/server"
	"github.com/hookjet/hookjet/state"
)

func TestFanOutSignedDeliveries(t *testing.T) {
	orders := newReceiver(t, []string{secretA, secretB}, nil)
	all := newReceiver(t, []string{secretA, secretB}, nil)
	invoices := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "orders", URL: orders.URL + "/hook", Events: []string{"order.*"}, Extra: "    headers: {X-Api-Key: topsecretvalue}\n"},
		endpointYAML{ID: "all", URL: all.URL, Events: []string{"order.created", "lead.>"}},
		endpointYAML{ID: "invoices", URL: invoices.URL, Events: []string{"invoice.>"}},
	)
	h := startHookjet(t, cfg, cli.Options{})

	body := []byte("{\"order\": 42,\n \"note\": \"bytes \\u00e9 kept as sent\"}  ")
	h.publish("order.created", "evt_1", body)
	h.publish("lead.new.web", "evt_2", []byte(`{"lead":1}`))
	h.publish("user.deleted", "evt_3", []byte(`{"nobody":"wants this"}`))

	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if orders.count() != 1 || all.count() != 2 {
			return fmt.Errorf("orders=%d all=%d", orders.count(), all.count())
		}
		return nil
	})
	d := orders.deliveries()[0]
	if d.ID != "evt_1" || !bytes.Equal(d.Body, body) {
		t.Fatalf("orders got id %q body %q", d.ID, d.Body)
	}
	if got := d.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := d.Header.Get("User-Agent"); got != "hookjet/"+server.Build().Version {
		t.Errorf("User-Agent = %q", got)
	}
	if got := d.Header.Get("X-Api-Key"); got != "topsecretvalue" {
		t.Errorf("configured header = %q", got)
	}
	ids := map[string]bool{}
	for _, d := range all.deliveries() {
		ids[d.ID] = true
	}
	if !ids["evt_1"] || !ids["evt_2"] {
		t.Fatalf("endpoint all got %v", ids)
	}
	// The unmatched event, and no second copy of the others: markers behind
	// them reach every receiver, then the counts must not have moved.
	h.settle("order.created", orders, all)
	h.settle("invoice.paid", invoices)
	if invoices.count() != 0 || orders.count() != 1 || all.count() != 2 {
		t.Fatalf("unexpected deliveries: invoices=%d orders=%d all=%d", invoices.count(), orders.count(), all.count())
	}
}

func TestDuplicateMsgIDDeliveredOnce(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "r", URL: r.URL}), cli.Options{})
	first := h.publish("order.created", "evt_dup", []byte(`{"n":1}`))
	second := h.publish("order.created", "evt_dup", []byte(`{"n":1}`))
	if !second.Duplicate || second.Sequence != first.Sequence {
		t.Fatalf("second publish: duplicate=%v seq=%d, first seq=%d", second.Duplicate, second.Sequence, first.Sequence)
	}
	h.publish("order.created", "evt_other", []byte(`{"n":2}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.distinct() != 2 {
			return fmt.Errorf("distinct=%d", r.distinct())
		}
		return nil
	})
	h.settle("order.created", r)
	if r.requestsFor("evt_dup") != 1 {
		t.Fatalf("evt_dup delivered %d times", r.requestsFor("evt_dup"))
	}
}

func TestMissingMsgIDDerivesStableID(t *testing.T) {
	var n atomic.Int32 // requests the script answered; handlers run concurrently
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		n.Add(1)
		if d.Attempt == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "r", URL: r.URL}), cli.Options{})
	ack := h.publish("order.created", "", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.count() != 2 {
			return fmt.Errorf("requests=%d", r.count())
		}
		return nil
	})
	h.settle("order.created", r)
	got := r.deliveries()
	want := "seq_" + strconv.FormatUint(ack.Sequence, 10)
	if len(got) != 2 || got[0].ID != want || got[1].ID != want {
		t.Fatalf("deliveries %+v, want two with id %q", got, want)
	}
	if n.Load() != 2 {
		t.Fatalf("script answered %d requests, want 2 (a 500, then a 200)", n.Load())
	}
	// Counted once per event: not again for its retry, nor for a
	// redelivery through the API.
	if code := h.api("POST", "/api/v1/endpoints/r/redeliver", "", map[string]string{"since": "10m"}, nil); code != http.StatusOK {
		t.Fatalf("redeliver: HTTP %d", code)
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.count() != 3 {
			return fmt.Errorf("requests=%d, want the redelivery too", r.count())
		}
		return nil
	})
	if got := h.metric("hookjet_events_without_id_total"); got != 1 {
		t.Fatalf("hookjet_events_without_id_total = %v, want 1", got)
	}
}

func TestFlakyEndpointDeliveredAfterFailures(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		if d.Attempt <= 2 {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "flaky", URL: r.URL}), cli.Options{})
	h.publish("order.created", "evt_flaky", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.count() != 3 {
			return fmt.Errorf("requests=%d", r.count())
		}
		return nil
	})
	// Acked after the 2xx: nothing more arrives, nothing is dead-lettered.
	h.settle("order.created", r)
	if r.count() != 3 {
		t.Fatalf("requests after success: %d", r.count())
	}
	if dl := h.dlq(""); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
	ids := r.deliveries()
	if ids[0].ID != ids[2].ID {
		t.Fatalf("webhook-id changed across retries: %q vs %q", ids[0].ID, ids[2].ID)
	}
}

func TestPermanentFailureDeadLetteredAfterOneAttempt(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusUnprocessableEntity)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "strict", URL: r.URL}), cli.Options{})
	h.publish("order.created", "evt_422", []byte(`{"bad":true}`))
	var dl []dlqEntry
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if dl = h.dlq("?endpoint=strict"); len(dl) != 1 {
			return fmt.Errorf("dead letters: %d", len(dl))
		}
		return nil
	})
	e := dl[0]
	if e.Reason != "permanent" || e.Attempts != 1 || e.LastStatus != 422 || e.EventID != "evt_422" || e.EventType != "order.created" || e.Endpoint != "strict" {
		t.Fatalf("dead letter %+v", e)
	}
	if e.LastError == "" || e.First == "" || e.Last == "" {
		t.Fatalf("dead letter lacks error or times: %+v", e)
	}
	// The DLQ copy carries the payload unchanged and the reason in headers.
	msg, err := h.js.Stream(t.Context(), "HOOKJET_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := msg.GetMsg(t.Context(), e.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw.Data) != `{"bad":true}` || raw.Header.Get("Hookjet-Reason") != "permanent" || raw.Subject != "hookjet.dlq.strict" {
		t.Fatalf("DLQ message subject %q reason %q body %q", raw.Subject, raw.Header.Get("Hookjet-Reason"), raw.Data)
	}
	h.settle("order.created", r)
	if r.count() != 1 {
		t.Fatalf("a 422 was retried: %d requests", r.count())
	}
}

func TestRedirectsAreNotFollowed(t *testing.T) {
	target := newReceiver(t, []string{secretA, secretB}, nil)
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.Header().Set("Location", target.URL)
		w.WriteHeader(http.StatusFound)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "moved", URL: r.URL}), cli.Options{})
	h.publish("order.created", "evt_302", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if dl := h.dlq(""); len(dl) != 1 || dl[0].Reason != "permanent" || dl[0].LastStatus != 302 {
			return fmt.Errorf("dead letters: %+v", dl)
		}
		return nil
	})
	h.settle("order.created", r)
	if target.count() != 0 || r.count() != 1 {
		t.Fatalf("redirect target got %d, endpoint got %d", target.count(), r.count())
	}
}

func TestAlways503ExhaustsExactlyMaxAttempts(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "down", URL: r.URL,
		Extra: "    retry: {max_attempts: 4}\n    breaker: {failure_threshold: 100}\n"}), cli.Options{})
	h.publish("order.created", "evt_503", []byte(`{}`))
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if dl := h.dlq(""); len(dl) != 1 {
			return fmt.Errorf("dead letters: %d", len(dl))
		}
		return nil
	})
	e := h.dlq("")[0]
	if e.Reason != "exhausted" || e.Attempts != 4 || e.LastStatus != 503 {
		t.Fatalf("dead letter %+v", e)
	}
	h.settle("order.created", r)
	if r.count() != 4 {
		t.Fatalf("requests = %d, want exactly max_attempts = 4", r.count())
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		if d.Attempt == 1 {
			w.Header().Set("Retry-After", "2")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "limited", URL: r.URL,
		Extra: "    retry: {cap: 10s}\n"}), cli.Options{})
	h.publish("order.created", "evt_429", []byte(`{}`))
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if r.count() != 2 {
			return fmt.Errorf("requests=%d", r.count())
		}
		return nil
	})
	got := r.deliveries()
	if gap := got[1].At.Sub(got[0].At); gap < 2*time.Second {
		t.Fatalf("retried %s after a 429 with Retry-After: 2", gap)
	}
}

func TestGoneDisablesEndpoint(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusGone)
	})
	witness := newReceiver(t, []string{secretA, secretB}, nil) // gets every event, for settle
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "gone", URL: r.URL},
		endpointYAML{ID: "witness", URL: witness.URL}), cli.Options{})
	h.publish("order.created", "evt_410", []byte(`{}`))
	type ep struct {
		Disabled bool `json:"disabled"`
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		var e ep
		h.api("GET", "/api/v1/endpoints/gone", "", nil, &e)
		dl := h.dlq("")
		if !e.Disabled || len(dl) != 1 || dl[0].Reason != "gone" {
			return fmt.Errorf("disabled=%v dead letters=%+v", e.Disabled, dl)
		}
		return nil
	})
	// While disabled nothing is sent; the event waits in JetStream. The
	// witness endpoint shows it was dispatched (and a marker behind it).
	h.publish("order.created", "evt_after", []byte(`{}`))
	h.settle("order.created", witness)
	if witness.requestsFor("evt_after") != 1 {
		t.Fatalf("witness got evt_after %d times before the marker", witness.requestsFor("evt_after"))
	}
	if r.count() != 1 {
		t.Fatalf("disabled endpoint got %d requests", r.count())
	}
	enabled := time.Now()
	if code := h.api("POST", "/api/v1/endpoints/gone/enable", "", nil, nil); code != 200 {
		t.Fatalf("enable: HTTP %d", code)
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.requestsFor("evt_after") == 0 {
			return fmt.Errorf("not delivered after enable")
		}
		return nil
	})
	// A request made while disabled, however late, shows up here.
	for _, d := range r.deliveries() {
		if d.ID == "evt_after" && d.At.Before(enabled) {
			t.Fatalf("evt_after reached the disabled endpoint at %v, before enable at %v", d.At, enabled)
		}
	}
}

func TestReplayKeepsWebhookID(t *testing.T) {
	accept := false
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		<-mu
		ok := accept
		mu <- struct{}{}
		if ok {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusBadRequest)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "picky", URL: r.URL}), cli.Options{})
	h.publish("order.created", "evt_replay", []byte(`{"v":1}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if len(h.dlq("")) != 1 {
			return fmt.Errorf("not dead-lettered yet")
		}
		return nil
	})
	var res struct {
		Matched  int `json:"matched"`
		Replayed int `json:"replayed"`
	}
	if code := h.api("POST", "/api/v1/dlq/replay", "", map[string]any{"endpoint": "picky", "dry_run": true}, &res); code != 200 || res.Matched != 1 || res.Replayed != 0 {
		t.Fatalf("dry run: HTTP %d %+v", code, res)
	}
	if len(h.dlq("")) != 1 {
		t.Fatal("dry run changed the DLQ")
	}
	<-mu
	accept = true
	mu <- struct{}{}
	if code := h.api("POST", "/api/v1/dlq/replay", "", map[string]any{"ids": []string{"evt_replay"}}, &res); code != 200 || res.Matched != 1 || res.Replayed != 1 {
		t.Fatalf("replay: HTTP %d %+v", code, res)
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.count() != 2 {
			return fmt.Errorf("requests=%d", r.count())
		}
		return nil
	})
	got := r.deliveries()
	if got[1].ID != "evt_replay" || !bytes.Equal(got[1].Body, []byte(`{"v":1}`)) {
		t.Fatalf("replayed delivery id %q body %q", got[1].ID, got[1].Body)
	}
	if dl := h.dlq(""); len(dl) != 0 {
		t.Fatalf("DLQ after replay: %+v", dl)
	}
}

func TestSSRFGuardRefusesLoopback(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "inside", URL: r.URL})
	cfg.Security.AllowPrivateNetworks = false
	h := startHookjet(t, cfg, cli.Options{})
	h.publish("order.created", "evt_ssrf", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		dl := h.dlq("")
		if len(dl) != 1 || dl[0].Reason != "rejected" {
			return fmt.Errorf("dead letters: %+v", dl)
		}
		return nil
	})
	if r.count() != 0 {
		t.Fatalf("guarded endpoint received %d requests", r.count())
	}
}

func TestReloadAddsChangesAndRemovesEndpoints(t *testing.T) {
	a := newReceiver(t, []string{secretA, secretB}, nil)
	b := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", endpointYAML{ID: "a", URL: a.URL, Events: []string{"order.*"}})
	h := startHookjet(t, cfg, cli.Options{})
	h.publish("order.created", "evt_1", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if a.count() != 1 {
			return fmt.Errorf("a=%d", a.count())
		}
		return nil
	})

	// Reload: a now also wants lead.*, b is new.
	next := testConfig(t, dir, "",
		endpointYAML{ID: "a", URL: a.URL, Events: []string{"order.*", "lead.*"}},
		endpointYAML{ID: "b", URL: b.URL, Events: []string{"lead.*"}})
	next.NATS, next.Admin = cfg.NATS, cfg.Admin
	if err := h.srv.Reload(t.Context(), next); err != nil {
		t.Fatal(err)
	}
	h.publish("lead.created", "evt_2", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if a.requestsFor("evt_2") != 1 || b.requestsFor("evt_2") != 1 {
			return fmt.Errorf("a=%d b=%d", a.requestsFor("evt_2"), b.requestsFor("evt_2"))
		}
		return nil
	})

	// Reload: a is removed; b keeps working.
	last := testConfig(t, dir, "", endpointYAML{ID: "b", URL: b.URL, Events: []string{"lead.*"}})
	last.NATS, last.Admin = cfg.NATS, cfg.Admin
	if err := h.srv.Reload(t.Context(), last); err != nil {
		t.Fatal(err)
	}
	if code := h.api("GET", "/api/v1/endpoints/a", "", nil, nil); code != http.StatusNotFound {
		t.Fatalf("the removed endpoint: HTTP %d, want 404", code)
	}
	h.publish("lead.created", "evt_3", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if b.requestsFor("evt_3") != 1 {
			return fmt.Errorf("b did not get evt_3")
		}
		return nil
	})
	if a.requestsFor("evt_3") != 0 {
		t.Fatal("removed endpoint still receives")
	}
}

func TestRateLimitSpacesRequests(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "slowpoke", URL: r.URL,
		Extra: "    rate_limit: {rps: 10, burst: 1}\n"}), cli.Options{})
	const n = 11
	for i := range n {
		h.publish("order.created", fmt.Sprintf("evt_%d", i), []byte(`{}`))
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if r.count() != n {
			return fmt.Errorf("requests=%d", r.count())
		}
		return nil
	})
	got := r.deliveries()
	// 11 requests at 10/s with a burst of 1 span at least 1 s (10 gaps of 100 ms).
	if span := got[n-1].At.Sub(got[0].At); span < 950*time.Millisecond {
		t.Fatalf("11 requests at 10 rps took only %s", span)
	}
}

// A second hookjet on the same data_dir, or on a busy port, fails at once
// with an error naming the problem, and leaves nothing running.
func TestStartFailsCleanly(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", endpointYAML{ID: "r", URL: r.URL})
	startHookjet(t, cfg, cli.Options{})

	same := *cfg
	same.NATS.Listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	if _, err := cli.Start(t.Context(), &same, cli.Options{}); err == nil || !errors.Is(err, state.ErrLocked) {
		t.Fatalf("same data_dir: %v, want ErrLocked", err)
	}
	busy := *cfg
	busy.DataDir = t.TempDir()
	if _, err := cli.Start(t.Context(), &busy, cli.Options{}); err == nil || !strings.Contains(err.Error(), "nats.listen") {
		t.Fatalf("busy NATS port: %v", err)
	}
	busy.NATS.Listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	busy.Admin.Listen = "127.0.0.1:" + strings.Split(cfg.NATS.Listen, ":")[1] // taken by the first hookjet's NATS
	if _, err := cli.Start(t.Context(), &busy, cli.Options{}); err == nil || !strings.Contains(err.Error(), "admin.listen") {
		t.Fatalf("busy admin port: %v", err)
	}
}

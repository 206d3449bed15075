package test

import (
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/cli"
)

// gauge returns the series of a per-endpoint metric as a collector that
// testutil can read. The gauges are refreshed from live state first.
func (h *hookjet) gauge(reg *prometheus.Registry, name, endpoint string) prometheus.Collector {
	h.t.Helper()
	h.api("GET", "/api/v1/summary", h.cfg.Admin.Token.Reveal(), nil, nil) // refreshes the state gauges
	mfs, err := reg.Gather()
	if err != nil {
		h.t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "endpoint" && lp.GetValue() == endpoint {
					v := m.GetGauge().GetValue()
					return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name}, func() float64 { return v })
				}
			}
		}
	}
	h.t.Fatalf("no series %s{endpoint=%q}", name, endpoint)
	return nil
}

type breakerView struct {
	State               string `json:"state"`
	ConsecutiveFailures int    `json:"consecutive_failures"`
}

type endpointView struct {
	ID          string      `json:"id"`
	Disabled    bool        `json:"disabled"`
	Breaker     breakerView `json:"breaker"`
	Pending     int         `json:"pending"`
	DeadLetters int         `json:"dead_letters"`
	HeldUntil   *time.Time  `json:"held_until"`
	LatencyMS   struct {
		P50, P95, P99 float64
		Samples       int64
	} `json:"latency_ms"`
}

func (h *hookjet) endpoint(id string) endpointView {
	h.t.Helper()
	var e endpointView
	if code := h.api("GET", "/api/v1/endpoints/"+id, h.cfg.Admin.Token.Reveal(), nil, &e); code != 200 {
		h.t.Fatalf("endpoint %s: HTTP %d", id, code)
	}
	return e
}

// An endpoint that goes down opens its breaker after the threshold and then
// gets only probes; its messages wait without being dead-lettered; the breaker
// stays open across a restart; when the endpoint is back the backlog arrives;
// a healthy endpoint receives everything meanwhile.
func TestBreakerIsolatesDeadEndpointAndSurvivesRestart(t *testing.T) {
	var up atomic.Bool
	down := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		if up.Load() {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	healthy := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	cfg := testConfig(t, dir, "",
		endpointYAML{ID: "down", URL: down.URL, Events: []string{"order.*"},
			Extra: "    retry: {max_attempts: 1000, base: 20ms, cap: 100ms}\n    breaker: {failure_threshold: 3, cooldown: 3s, max_cooldown: 6s}\n"},
		endpointYAML{ID: "healthy", URL: healthy.URL, Events: []string{"order.*"}},
	)
	reg := prometheus.NewRegistry()
	h := startHookjet(t, cfg, cli.Options{Registry: reg})
	const n = 50
	for i := range n {
		h.publish("order.created", fmt.Sprintf("evt_%d", i), []byte(`{}`))
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if healthy.distinct() != n {
			return fmt.Errorf("healthy got %d of %d", healthy.distinct(), n)
		}
		if s := h.endpoint("down").Breaker.State; s != "open" {
			return fmt.Errorf("breaker %s", s)
		}
		return nil
	})
	// The transition moved the gauge (0 closed, 1 half-open, 2 open).
	if got := testutil.ToFloat64(h.gauge(reg, "hookjet_breaker_state", "down")); got != 2 {
		t.Errorf("hookjet_breaker_state{endpoint=down} = %v, want 2", got)
	}
	if got := testutil.ToFloat64(h.gauge(reg, "hookjet_breaker_state", "healthy")); got != 0 {
		t.Errorf("hookjet_breaker_state{endpoint=healthy} = %v, want 0", got)
	}
	opened := down.count()
	if opened < 3 || opened > 3+16 { // threshold, plus what was already in flight
		t.Fatalf("down endpoint got %d requests before its breaker opened", opened)
	}
	// While open: nothing but one probe per cooldown, nothing dead-lettered.
	// Wait for that probe to fail and the breaker to open again (its cooldown
	// doubles, so no second probe follows soon): then exactly one request
	// more has arrived.
	awaitFailedProbe(t, h, down, opened)
	if got := down.count(); got != opened+1 {
		t.Fatalf("open breaker let %d requests through in one cooldown, want 1 probe", got-opened)
	}
	if dl := h.dlq(""); len(dl) != 0 {
		t.Fatalf("waiting messages were dead-lettered: %+v", dl)
	}

	// Restart: the breaker is still open and the endpoint is not hit by a burst.
	h.stop()
	before := down.count()
	h = startHookjet(t, cfg, cli.Options{})
	if s := h.endpoint("down").Breaker.State; s != "open" {
		t.Fatalf("after restart breaker is %s", s)
	}
	awaitFailedProbe(t, h, down, before)
	if got := down.count(); got != before+1 {
		t.Fatalf("after restart the endpoint got %d requests in one cooldown, want 1 probe", got-before)
	}

	// Back up: the probe succeeds, the breaker closes and the backlog arrives.
	up.Store(true)
	checkFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if down.distinct() != n {
			return fmt.Errorf("down endpoint has %d of %d", down.distinct(), n)
		}
		return nil
	})
	checkFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if s := h.endpoint("down").Breaker.State; s != "closed" {
			return fmt.Errorf("breaker %s", s)
		}
		return nil
	})
	if dl := h.dlq(""); len(dl) != 0 {
		t.Fatalf("dead letters: %+v", dl)
	}
}

// awaitFailedProbe waits until the open breaker of endpoint "down" has let a
// probe through to rec (more than seen requests) and, the probe having
// failed, reports open again.
func awaitFailedProbe(t *testing.T, h *hookjet, rec *receiver, seen int) {
	t.Helper()
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if rec.count() <= seen {
			return fmt.Errorf("no probe yet")
		}
		if s := h.endpoint("down").Breaker.State; s != "open" {
			return fmt.Errorf("breaker %s", s)
		}
		return nil
	})
}

// An event id republished after the stream's duplicate window, and again
// after a restart, is not delivered again.
func TestDedupeBeyondDuplicateWindow(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	cfg := testConfig(t, dir, "streams:\n  duplicate_window: 1s\n", endpointYAML{ID: "r", URL: r.URL})
	h := startHookjet(t, cfg, cli.Options{})
	h.publish("order.created", "evt_once", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.count() != 1 {
			return fmt.Errorf("requests=%d", r.count())
		}
		return nil
	})
	time.Sleep(1500 * time.Millisecond) // past JetStream's window
	if ack := h.publish("order.created", "evt_once", []byte(`{}`)); ack.Duplicate {
		t.Fatal("JetStream still deduped: the test did not get past the window")
	}
	h.stop()
	h = startHookjet(t, cfg, cli.Options{})
	h.publish("order.created", "evt_once", []byte(`{}`))
	h.settle("order.created", r)
	if got := r.requestsFor("evt_once"); got != 1 {
		t.Fatalf("evt_once delivered %d times", got)
	}
}

package dispatch

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
)

// OnBreakerTransition and SetDisabled are the engine's side of the endpoint
// states (package epstate: disabled, held), which the stages read through
// Blocked and change through Hold and Disable.

// OnBreakerTransition counts and publishes a breaker transition (the breaker
// registry logs it). Pass it to breaker.WithOnTransition.
func (d *Dispatcher) OnBreakerTransition(t breaker.Transition) {
	if e := d.endpoint(t.Endpoint); e != nil && !e.Removed.Load() {
		d.o.Metrics.BreakerState.WithLabelValues(d.series.Label(t.Endpoint)).Set(float64(t.To))
	}
	kind := map[breaker.State]string{breaker.Open: "endpoint.opened", breaker.Closed: "endpoint.closed", breaker.HalfOpen: "endpoint.half_opened"}[t.To]
	d.states.Ops(kind, map[string]any{"endpoint": t.Endpoint, "from": t.From.String(), "to": t.To.String(), "cooldown_seconds": t.Cooldown.Seconds()})
	if t.To == breaker.Open {
		d.drains.Wake(t.Endpoint, d.now().Add(t.Cooldown))
	}
}

// SetDisabled disables or re-enables an endpoint for every hookjet process.
// A disabled endpoint's deliveries wait in HOOKJET_TASKS until it is enabled
// or they pass retry.max_age (then they are dead-lettered as expired).
func (d *Dispatcher) SetDisabled(ctx context.Context, id string, disabled bool, reason string) error {
	if d.endpoint(id) == nil {
		return fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	return d.states.SetDisabled(ctx, id, disabled, reason)
}

// hourStats counts outcomes per minute over the last hour.
type hourStats struct {
	mu      sync.Mutex
	minute  [60]int64
	ok, bad [60]int64
}

func (h *hourStats) add(now time.Time, ok bool) {
	min := now.Unix() / 60
	i := min % 60
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.minute[i] != min {
		h.minute[i], h.ok[i], h.bad[i] = min, 0, 0
	}
	if ok {
		h.ok[i]++
	} else {
		h.bad[i]++
	}
}

func (h *hourStats) sum(now time.Time) (ok, bad int64) {
	min := now.Unix() / 60
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.minute {
		if min-h.minute[i] < 60 {
			ok += h.ok[i]
			bad += h.bad[i]
		}
	}
	return ok, bad
}

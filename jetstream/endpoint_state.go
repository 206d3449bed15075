package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/breaker"
)

// ops publishes an operational event on hookjet.ops.<kind>; HOOKJET_OPS keeps it.
func (d *Dispatcher) ops(kind string, body map[string]any) {
	body["at"] = d.now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	if err := d.o.NC.Publish(OpsPrefix+kind, b); err != nil {
		d.log.Warn("publish operational event", "kind", kind, "err", err)
	}
}

// OnBreakerTransition logs, counts and publishes a breaker transition. Pass it
// to breaker.WithOnTransition.
func (d *Dispatcher) OnBreakerTransition(t breaker.Transition) {
	d.o.Metrics.BreakerState.WithLabelValues(t.Endpoint).Set(float64(t.To))
	kind := map[breaker.State]string{breaker.Open: "endpoint.opened", breaker.Closed: "endpoint.closed", breaker.HalfOpen: "endpoint.half_opened"}[t.To]
	d.log.Warn("breaker "+t.To.String(), "endpoint", t.Endpoint, "from", t.From.String(), "cooldown", t.Cooldown)
	d.ops(kind, map[string]any{"endpoint": t.Endpoint, "from": t.From.String(), "to": t.To.String(), "cooldown_seconds": t.Cooldown.Seconds()})
}

type disabledState struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

func (d *Dispatcher) applyState(e natsjs.KeyValueEntry) {
	id := e.Key()
	d.mu.Lock()
	if e.Operation() == natsjs.KeyValuePut {
		var s disabledState
		_ = json.Unmarshal(e.Value(), &s)
		d.disabled[id] = s.Reason
	} else {
		delete(d.disabled, id)
	}
	w := d.workers[id]
	d.mu.Unlock()
	if w != nil {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (d *Dispatcher) disable(id, reason string) {
	if err := d.SetDisabled(context.Background(), id, true, reason); err != nil {
		d.log.Error("disable endpoint", "endpoint", id, "err", err)
	}
}

// SetDisabled disables or re-enables an endpoint for every hookjet process. A
// disabled endpoint keeps its messages in JetStream until it is enabled.
func (d *Dispatcher) SetDisabled(ctx context.Context, id string, disabled bool, reason string) error {
	d.mu.Lock()
	_, known := d.workers[id]
	d.mu.Unlock()
	if !known {
		return fmt.Errorf("%w: %q", ErrUnknownEndpoint, id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if disabled {
		b, err := json.Marshal(disabledState{Reason: reason, At: d.now().UTC()})
		if err != nil {
			return err
		}
		if _, err := d.states.Put(ctx, id, b); err != nil {
			return fmt.Errorf("disable %s: %w", id, err)
		}
		d.log.Warn("endpoint disabled", "endpoint", id, "reason", reason)
		d.ops("endpoint.disabled", map[string]any{"endpoint": id, "reason": reason})
		return nil
	}
	if err := d.states.Delete(ctx, id); err != nil && !errors.Is(err, natsjs.ErrKeyNotFound) {
		return fmt.Errorf("enable %s: %w", id, err)
	}
	d.log.Info("endpoint enabled", "endpoint", id)
	d.ops("endpoint.enabled", map[string]any{"endpoint": id})
	return nil
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

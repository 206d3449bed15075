package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hookjet/hookjet/jetstream"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
)

// endpointState is what every hookjet process must know about an endpoint
// beyond its definition: disabled (by a 410 or an operator) or held (by a
// receiver's Retry-After). It lives in the KV bucket HOOKJET_ENDPOINT_STATE,
// keyed by endpoint id, with a key only for endpoints in one of those states.
type endpointState struct {
	Disabled  bool      `json:"disabled,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at"`
	HoldUntil time.Time `json:"hold_until,omitzero"`
	HoldCause string    `json:"hold_cause,omitempty"`
}

// watchStates loads every endpoint state and keeps them current.
func (d *Dispatcher) watchStates(ctx context.Context) error {
	w, err := d.stateKV.WatchAll(d.loopCtx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", jetstream.StateBucket, err)
	}
	for e := range w.Updates() { // the initial values arrive before the nil marker
		if e == nil {
			break
		}
		d.applyState(e)
	}
	if ctx.Err() != nil {
		_ = w.Stop()
		return ctx.Err()
	}
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-d.loopCtx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil {
					d.applyState(e)
				}
			}
		}
	}()
	return nil
}

func (d *Dispatcher) applyState(e natsjs.KeyValueEntry) {
	id := e.Key()
	var s endpointState
	if e.Operation() == natsjs.KeyValuePut {
		_ = json.Unmarshal(e.Value(), &s)
	}
	d.mu.Lock()
	if s.Disabled || !s.HoldUntil.IsZero() {
		d.states[id] = s
	} else {
		delete(d.states, id)
	}
	d.mu.Unlock()
	if !s.Disabled {
		d.drains.Wake(id, s.HoldUntil)
	}
}

func (d *Dispatcher) state(id string) endpointState {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.states[id]
}

// blocked says why endpoint id cannot receive now ("" when it can) and until
// when a hold lasts.
func (d *Dispatcher) blocked(id string, now time.Time) (cause string, until time.Time) {
	s := d.state(id)
	switch {
	case s.Disabled:
		return "disabled", time.Time{}
	case s.HoldUntil.After(now):
		return s.HoldCause, s.HoldUntil
	}
	return "", time.Time{}
}

// updateState changes an endpoint's state in the bucket with a
// compare-and-set, retrying on a concurrent change, and applies it locally
// at once.
func (d *Dispatcher) updateState(ctx context.Context, id string, fn func(*endpointState) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		var s endpointState
		var rev uint64
		e, err := d.stateKV.Get(ctx, id)
		switch {
		case errors.Is(err, natsjs.ErrKeyNotFound):
		case err != nil:
			return fmt.Errorf("read state of %s: %w", id, err)
		default:
			rev = e.Revision()
			_ = json.Unmarshal(e.Value(), &s)
		}
		if !fn(&s) {
			return nil
		}
		if !s.Disabled && s.HoldUntil.Before(d.now()) {
			if rev == 0 {
				return nil
			}
			err = d.stateKV.Delete(ctx, id, natsjs.LastRevision(rev))
		} else {
			b, _ := json.Marshal(s)
			if rev == 0 {
				_, err = d.stateKV.Create(ctx, id, b)
			} else {
				_, err = d.stateKV.Update(ctx, id, b, rev)
			}
		}
		if err == nil {
			d.mu.Lock()
			if s.Disabled || s.HoldUntil.After(d.now()) {
				d.states[id] = s
			} else {
				delete(d.states, id)
			}
			d.mu.Unlock()
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("write state of %s: %w", id, err)
		}
	}
}

// hold pauses endpoint id until until, for every process. Holds only grow.
// This process holds at once; the others when the bucket's update reaches them.
func (d *Dispatcher) hold(id string, until time.Time, cause string) {
	d.mu.Lock()
	if s := d.states[id]; until.After(s.HoldUntil) {
		s.HoldUntil, s.HoldCause, s.At = until, cause, d.now().UTC()
		d.states[id] = s
	}
	d.mu.Unlock()
	err := d.updateState(d.sendCtx, id, func(s *endpointState) bool {
		if !until.After(s.HoldUntil) {
			return false
		}
		s.HoldUntil, s.HoldCause, s.At = until, cause, d.now().UTC()
		return true
	})
	if err != nil {
		d.log.Warn("hold endpoint", "endpoint", id, "cause", cause, "err", err)
	}
	d.drains.Wake(id, until)
}

// ops publishes an operational event on hookjet.ops.<kind>; HOOKJET_OPS keeps it.
func (d *Dispatcher) ops(kind string, body map[string]any) {
	body["at"] = d.now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	if err := d.o.NC.Publish(jetstream.OpsPrefix+kind, b); err != nil {
		d.log.Warn("publish operational event", "kind", kind, "err", err)
	}
}

// OnBreakerTransition counts and publishes a breaker transition (the breaker
// registry logs it). Pass it to breaker.WithOnTransition.
func (d *Dispatcher) OnBreakerTransition(t breaker.Transition) {
	if e := d.endpoint(t.Endpoint); e != nil && !e.removed.Load() {
		d.o.Metrics.BreakerState.WithLabelValues(d.series.label(t.Endpoint)).Set(float64(t.To))
	}
	kind := map[breaker.State]string{breaker.Open: "endpoint.opened", breaker.Closed: "endpoint.closed", breaker.HalfOpen: "endpoint.half_opened"}[t.To]
	d.ops(kind, map[string]any{"endpoint": t.Endpoint, "from": t.From.String(), "to": t.To.String(), "cooldown_seconds": t.Cooldown.Seconds()})
	if t.To == breaker.Open {
		d.drains.Wake(t.Endpoint, d.now().Add(t.Cooldown))
	}
}

// disable turns endpoint id off after a 410. Only the process whose write
// changes the state publishes the operational event, so N requests in flight
// when the endpoint answered 410 publish one.
func (d *Dispatcher) disable(id, reason string) {
	changed := false
	err := d.updateState(d.sendCtx, id, func(s *endpointState) bool {
		if s.Disabled {
			return false
		}
		s.Disabled, s.Reason, s.At = true, reason, d.now().UTC()
		changed = true
		return true
	})
	if err != nil {
		d.log.Error("disable endpoint", "endpoint", id, "err", err)
		return
	}
	if changed {
		d.log.Warn("endpoint disabled", "endpoint", id, "reason", reason)
		d.ops("endpoint.disabled", map[string]any{"endpoint": id, "reason": reason})
	}
}

// SetDisabled disables or re-enables an endpoint for every hookjet process.
// A disabled endpoint's deliveries wait in HOOKJET_TASKS until it is enabled
// or they pass retry.max_age (then they are dead-lettered as expired).
func (d *Dispatcher) SetDisabled(ctx context.Context, id string, disabled bool, reason string) error {
	if d.endpoint(id) == nil {
		return fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	err := d.updateState(ctx, id, func(s *endpointState) bool {
		s.Disabled, s.Reason, s.At = disabled, reason, d.now().UTC()
		if !disabled {
			s.Reason = ""
		}
		return true
	})
	if err != nil {
		return err
	}
	if disabled {
		d.log.Warn("endpoint disabled", "endpoint", id, "reason", reason)
		d.ops("endpoint.disabled", map[string]any{"endpoint": id, "reason": reason})
		return nil
	}
	d.log.Info("endpoint enabled", "endpoint", id)
	d.ops("endpoint.enabled", map[string]any{"endpoint": id})
	d.drains.Wake(id, time.Time{})
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

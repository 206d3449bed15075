package epstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/hookjet/hookjet/jetstream"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// State is what every hookjet process must know about an endpoint
// beyond its definition: disabled (by a 410 or an operator) or held (by a
// receiver's Retry-After). It lives in the KV bucket HOOKJET_ENDPOINT_STATE,
// keyed by endpoint id, with a key only for endpoints in one of those states.
type State struct {
	Disabled  bool      `json:"disabled,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	At        time.Time `json:"at"`
	HoldUntil time.Time `json:"hold_until,omitzero"`
	HoldCause string    `json:"hold_cause,omitempty"`
}

// States is every endpoint's state, as every process sees it: loaded from
// the bucket and kept current by its watch, changed with a compare-and-set
// and applied here at once.
type States struct {
	kv       natsjs.KeyValue
	nc       *nats.Conn // operational events
	announce Announcer  // nil: none
	log      *slog.Logger
	now      func() time.Time
	wake     func(id string, at time.Time) // the endpoint's drain: look again at at (zero: now)
	// ctx bounds the writes of the delivery path (holds, disables): the
	// engine's send context; stop ends the watch, which background waits
	// for.
	ctx, stop  context.Context
	background *sync.WaitGroup

	mu     sync.RWMutex
	states map[string]State
}

// Announcer hears of each operational event States publishes on
// hookjet.ops.<kind>, with the endpoint it is about, why (a short code,
// never error text) and when (package opsevent turns them into hookjet's
// own events).
type Announcer interface {
	Announce(kind, endpoint, reason string, at time.Time)
}

// Options are what States are made with.
type Options struct {
	KV         natsjs.KeyValue
	NC         *nats.Conn
	Announcer  Announcer // hears of every operational event; nil: nobody
	Log        *slog.Logger
	Now        func() time.Time
	Wake       func(id string, at time.Time)
	Ctx, Stop  context.Context
	Background *sync.WaitGroup
}

// New returns the states of HOOKJET_ENDPOINT_STATE's bucket; Watch loads them.
func New(o Options) *States {
	return &States{kv: o.KV, nc: o.NC, announce: o.Announcer, log: o.Log, now: o.Now, wake: o.Wake, ctx: o.Ctx, stop: o.Stop, background: o.Background, states: map[string]State{}}
}

// All calls fn with every endpoint in a state (disabled or held).
func (d *States) All(fn func(id string, s State)) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	for id, s := range d.states {
		fn(id, s)
	}
}

// Watch loads every endpoint state and keeps them current until the
// owner's stop context ends.
func (d *States) Watch(ctx context.Context) error {
	w, err := d.kv.WatchAll(d.stop)
	if err != nil {
		return fmt.Errorf("watch %s: %w", jetstream.StateBucket, err)
	}
	for e := range w.Updates() { // the initial values arrive before the nil marker
		if e == nil {
			break
		}
		d.apply(e)
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
			case <-d.stop.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil {
					d.apply(e)
				}
			}
		}
	}()
	return nil
}

func (d *States) apply(e natsjs.KeyValueEntry) {
	id := e.Key()
	var s State
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
		d.wake(id, s.HoldUntil)
	}
}

func (d *States) Get(id string) State {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.states[id]
}

// Blocked says why endpoint id cannot receive now ("" when it can) and until
// when a hold lasts.
func (d *States) Blocked(id string, now time.Time) (cause string, until time.Time) {
	s := d.Get(id)
	switch {
	case s.Disabled:
		return "disabled", time.Time{}
	case s.HoldUntil.After(now):
		return s.HoldCause, s.HoldUntil
	}
	return "", time.Time{}
}

// Update changes an endpoint's state in the bucket with a
// compare-and-set, retrying on a concurrent change, and applies it locally
// at once.
func (d *States) Update(ctx context.Context, id string, fn func(*State) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		var s State
		var rev uint64
		e, err := d.kv.Get(ctx, id)
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
			err = d.kv.Delete(ctx, id, natsjs.LastRevision(rev))
		} else {
			b, _ := json.Marshal(s)
			if rev == 0 {
				_, err = d.kv.Create(ctx, id, b)
			} else {
				_, err = d.kv.Update(ctx, id, b, rev)
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

// Hold pauses endpoint id until until, for every process. Holds only grow.
// This process holds at once; the others when the bucket's update reaches them.
func (d *States) Hold(id string, until time.Time, cause string) {
	d.mu.Lock()
	if s := d.states[id]; until.After(s.HoldUntil) {
		s.HoldUntil, s.HoldCause, s.At = until, cause, d.now().UTC()
		d.states[id] = s
	}
	d.mu.Unlock()
	err := d.Update(d.ctx, id, func(s *State) bool {
		if !until.After(s.HoldUntil) {
			return false
		}
		s.HoldUntil, s.HoldCause, s.At = until, cause, d.now().UTC()
		return true
	})
	if err != nil {
		d.log.Warn("hold endpoint", "endpoint", id, "cause", cause, "err", err)
	}
	d.wake(id, until)
}

// Ops publishes an operational event on hookjet.ops.<kind>; HOOKJET_OPS
// keeps it, and the Announcer hears of it. body names the endpoint
// ("endpoint"), and for a dead letter its reason ("reason"), for a
// breaker transition the state it left ("from").
func (d *States) Ops(kind string, body map[string]any) {
	reason, _ := body["reason"].(string)
	if from, ok := body["from"].(string); ok {
		reason = breakerReason(kind, from)
	}
	d.ops(kind, body, reason)
}

// ops is Ops with the Announcer's reason.
func (d *States) ops(kind string, body map[string]any, reason string) {
	at := d.now().UTC()
	body["at"] = at.Format(time.RFC3339Nano)
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	if err := d.nc.Publish(jetstream.OpsPrefix+kind, b); err != nil {
		d.log.Warn("publish operational event", "kind", kind, "err", err)
	}
	if d.announce != nil {
		id, _ := body["endpoint"].(string)
		d.announce.Announce(kind, id, reason, at)
	}
}

// breakerReason says why a breaker went to kind's state from from: it
// opened after failures (from closed) or a failed probe (from half_open);
// it closed after a probe (from half_open) or an operator's reset (from
// open).
func breakerReason(kind, from string) string {
	switch kind {
	case "endpoint.opened":
		if from == "half_open" {
			return "probe_failed"
		}
		return "failures"
	case "endpoint.closed":
		if from == "half_open" {
			return "probe_succeeded"
		}
		return "reset"
	}
	return ""
}

// Disable turns endpoint id off after a 410 (the Announcer's reason:
// gone). Only the process whose write changes the state publishes the
// operational event, so N requests in flight when the endpoint answered
// 410 publish one.
func (d *States) Disable(id, reason string) {
	changed := false
	err := d.Update(d.ctx, id, func(s *State) bool {
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
		d.ops("endpoint.disabled", map[string]any{"endpoint": id, "reason": reason}, "gone")
	}
}

// SetDisabled disables or re-enables endpoint id for every hookjet process.
// A disabled endpoint's deliveries wait in HOOKJET_TASKS until it is enabled
// or they pass retry.max_age (then they are dead-lettered as expired).
func (d *States) SetDisabled(ctx context.Context, id string, disabled bool, reason string) error {
	err := d.Update(ctx, id, func(s *State) bool {
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
		d.ops("endpoint.disabled", map[string]any{"endpoint": id, "reason": reason}, "operator")
		return nil
	}
	d.log.Info("endpoint enabled", "endpoint", id)
	d.ops("endpoint.enabled", map[string]any{"endpoint": id}, "operator")
	d.wake(id, time.Time{})
	return nil
}

// Purge deletes endpoint id's state from the bucket, for every process
// (its endpoint was deleted through the admin API); a state it did not
// have is no error.
func (d *States) Purge(ctx context.Context, id string) error {
	if err := d.kv.Purge(ctx, id); err != nil && !errors.Is(err, natsjs.ErrKeyNotFound) {
		return err
	}
	return nil
}

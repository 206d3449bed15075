package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/api"
)

// Only the lane's owner knows what waits in the ordered lane and which keys
// are held (lane.go). Another process asks it over NATS (no stream stores
// the answer) for every endpoint's at once, so that an endpoint's view
// says the same whichever process serves it.
const (
	// laneViewSubject answers every endpoint's laneView.
	laneViewSubject = "hookjet.lane.view"
	// heldSubject answers every endpoint's held keys only: what processes
	// of an earlier release ask, and answer.
	heldSubject = "hookjet.lane.held"
	// heldAsk bounds the wait for the owner's answer: without one (no
	// owner yet, or NATS down) the view has nothing from the lane.
	heldAsk = 500 * time.Millisecond
)

// laneView is what waits in the ordered lane for one endpoint, as its
// owner sees it.
type laneView struct {
	// Waiting counts the deliveries waiting in the lane (settled ones and
	// hold markers not counted), in flight included; Retrying those of
	// them waiting for a retry's due time.
	Waiting  uint64 `json:"waiting"`
	Retrying uint64 `json:"retrying,omitempty"`
	// Oldest is when the longest-waiting of them was published.
	Oldest time.Time `json:"oldest,omitzero"`
	// Held are the keys held behind an earlier delivery of their own.
	Held *api.HeldKeys `json:"held,omitempty"`
}

// views is laneView of every endpoint with something in the lane. It
// reports false when this process does not own the lane.
func (l *lane) views() (map[string]laneView, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.owner {
		return nil, false
	}
	now := l.d.now()
	all := map[string]laneView{}
	for ep, keys := range l.byEp {
		// The count is kept as entries come and go (lane_bound.go); only a
		// key's first entries can be due later or be its oldest (replays,
		// then its events in publish order), so the view reads those, not
		// every entry waiting, under the lane's lock.
		v := laneView{Waiting: uint64(max(0, l.counts[ep].deliveries))}
		for _, k := range keys {
			for _, e := range k.entries {
				if e.hold {
					continue
				}
				if e.due.After(now) {
					v.Retrying++
				}
				if v.Oldest.IsZero() || e.first.Before(v.Oldest) {
					v.Oldest = e.first
				}
				if !e.front {
					break // the key's later events were published after
				}
			}
		}
		v.Held = l.heldOf(ep)
		if v.Waiting > 0 || v.Held != nil {
			all[ep] = v
		}
	}
	return all, true
}

// laneViews returns what waits in the ordered lane for the endpoints ids,
// those with nothing left out: this process's view when it delivers the
// lane, the owner's otherwise. Nothing is asked when none of ids orders by
// key (ids nil: when no endpoint does).
func (d *Dispatcher) laneViews(ctx context.Context, ids []string) map[string]laneView {
	if !d.anyOrdered(ids) {
		return nil
	}
	if all, ok := d.lane.views(); ok {
		return all
	}
	if d.o.NC == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, heldAsk)
	defer cancel()
	m, err := d.o.NC.RequestWithContext(ctx, laneViewSubject, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		return d.heldOnly(ctx) // an owner of an earlier release
	}
	if err != nil {
		d.log.Debug("ask the ordered lane's owner what waits", "err", err)
		return nil
	}
	var all map[string]laneView
	if err := json.Unmarshal(m.Data, &all); err != nil {
		d.log.Debug("what waits in the ordered lane, from its owner", "err", err)
		return nil
	}
	return all
}

// heldOnly asks an owner of an earlier release for the held keys, the only
// part of laneView it knows how to answer.
func (d *Dispatcher) heldOnly(ctx context.Context) map[string]laneView {
	m, err := d.o.NC.RequestWithContext(ctx, heldSubject, nil)
	if err != nil {
		d.log.Debug("ask the ordered lane's owner for held keys", "err", err)
		return nil
	}
	var held map[string]*api.HeldKeys
	if err := json.Unmarshal(m.Data, &held); err != nil {
		d.log.Debug("held keys from the ordered lane's owner", "err", err)
		return nil
	}
	all := make(map[string]laneView, len(held))
	for ep, h := range held {
		all[ep] = laneView{Held: h}
	}
	return all
}

// anyOrdered reports whether one of the endpoints ids (nil: of every
// endpoint) orders by key.
func (d *Dispatcher) anyOrdered(ids []string) bool {
	if ids == nil {
		d.mu.RLock()
		defer d.mu.RUnlock()
		for _, e := range d.eps {
			if e.set.Load().ep.Ordered() {
				return true
			}
		}
		return false
	}
	for _, id := range ids {
		if e := d.endpoint(id); e != nil && e.set.Load().ep.Ordered() {
			return true
		}
	}
	return false
}

// answerHeld answers other processes' questions for what waits in the
// lane (and, for processes of an earlier release, for held keys) while
// this process owns the lane, until Stop.
func (d *Dispatcher) answerHeld() error {
	if d.o.NC == nil {
		return nil
	}
	answer := func(view func() (any, bool)) nats.MsgHandler {
		return func(m *nats.Msg) {
			v, ok := view()
			if !ok {
				return // another process owns the lane: it answers
			}
			b, err := json.Marshal(v)
			if err == nil {
				_ = m.Respond(b)
			}
		}
	}
	for subj, view := range map[string]func() (any, bool){
		laneViewSubject: func() (any, bool) { return d.lane.views() },
		heldSubject:     func() (any, bool) { return d.lane.heldAll() },
	} {
		sub, err := d.o.NC.Subscribe(subj, answer(view))
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", subj, err)
		}
		context.AfterFunc(d.loopCtx, func() { _ = sub.Unsubscribe() })
	}
	return nil
}

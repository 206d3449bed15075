package lane

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/api"
)

// Only the lane's owner knows what waits in the ordered lane and which keys
// are held. Another process asks it over NATS (no stream stores the
// answer) for every endpoint's at once, so that an endpoint's view says the
// same whichever process serves it.
const (
	// viewSubject answers every endpoint's View.
	viewSubject = "hookjet.lane.view"
	// heldSubject answers every endpoint's held keys only: what processes
	// of an earlier release ask, and answer.
	heldSubject = "hookjet.lane.held"
	// heldAsk bounds the wait for the owner's answer: without one (no
	// owner yet, or NATS down) the view has nothing from the lane.
	heldAsk = 500 * time.Millisecond
)

// View is what waits in the ordered lane for one endpoint, as its owner
// sees it.
type View struct {
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

// Views is View of every endpoint with something in the lane. It reports
// false when this process does not own the lane.
func (l *Owner) Views() (map[string]View, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.owner {
		return nil, false
	}
	now := l.now()
	all := map[string]View{}
	for ep, keys := range l.byEp {
		// The count is kept as entries come and go (bound.go); only a
		// key's first entries can be due later or be its oldest (replays,
		// then its events in publish order), so the view reads those, not
		// every entry waiting, under the lane's lock.
		v := View{Waiting: uint64(max(0, l.tally.waiting(ep)))}
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

// Ask asks the lane's owner, over nc, what waits in the lane for every
// endpoint; nil without an answer within heldAsk.
func Ask(ctx context.Context, nc *nats.Conn, log *slog.Logger) map[string]View {
	ctx, cancel := context.WithTimeout(ctx, heldAsk)
	defer cancel()
	m, err := nc.RequestWithContext(ctx, viewSubject, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		return heldOnly(ctx, nc, log) // an owner of an earlier release
	}
	if err != nil {
		log.Debug("ask the ordered lane's owner what waits", "err", err)
		return nil
	}
	var all map[string]View
	if err := json.Unmarshal(m.Data, &all); err != nil {
		log.Debug("what waits in the ordered lane, from its owner", "err", err)
		return nil
	}
	return all
}

// heldOnly asks an owner of an earlier release for the held keys, the only
// part of View it knows how to answer.
func heldOnly(ctx context.Context, nc *nats.Conn, log *slog.Logger) map[string]View {
	m, err := nc.RequestWithContext(ctx, heldSubject, nil)
	if err != nil {
		log.Debug("ask the ordered lane's owner for held keys", "err", err)
		return nil
	}
	var held map[string]*api.HeldKeys
	if err := json.Unmarshal(m.Data, &held); err != nil {
		log.Debug("held keys from the ordered lane's owner", "err", err)
		return nil
	}
	all := make(map[string]View, len(held))
	for ep, h := range held {
		all[ep] = View{Held: h}
	}
	return all
}

// Answer answers other processes' questions over nc for what waits in the
// lane (and, for processes of an earlier release, for held keys) while
// this process owns the lane, until ctx ends.
func (l *Owner) Answer(ctx context.Context, nc *nats.Conn) error {
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
		viewSubject: func() (any, bool) { return l.Views() },
		heldSubject: func() (any, bool) { return l.HeldAll() },
	} {
		sub, err := nc.Subscribe(subj, answer(view))
		if err != nil {
			return fmt.Errorf("subscribe %s: %w", subj, err)
		}
		context.AfterFunc(ctx, func() { _ = sub.Unsubscribe() })
	}
	return nil
}

// maxHeldShown bounds the keys an endpoint's view lists.
const maxHeldShown = 10

// Held says which of endpoint id's keys are held and why, the
// longest-held first (at most maxHeldShown listed), as the lane's owner
// sees them; nil in another process, or when none is held.
func (l *Owner) Held(id string) *api.HeldKeys {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heldOf(id)
}

// HeldAll is Held of every endpoint with a held key. It reports false when
// this process does not own the lane.
func (l *Owner) HeldAll() (map[string]*api.HeldKeys, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.owner {
		return nil, false
	}
	all := map[string]*api.HeldKeys{}
	for ep := range l.byEp {
		if h := l.heldOf(ep); h != nil {
			all[ep] = h
		}
	}
	return all, true
}

// heldOf is Held; l.mu is held.
func (l *Owner) heldOf(id string) *api.HeldKeys {
	var h *api.HeldKeys
	for key, k := range l.byEp[id] {
		if k.why == "" {
			continue
		}
		if h == nil {
			h = &api.HeldKeys{Why: map[string]int{}}
		}
		h.Count++
		h.Why[k.why]++
		hk := api.HeldKey{Key: key, Why: k.why, Since: k.since.UTC()}
		if len(k.entries) > 0 {
			e := k.entries[0]
			hk.EventID, hk.Attempts = e.id, e.tries
			if !e.due.IsZero() {
				due := e.due.UTC()
				hk.NextAttempt = &due
			}
		}
		h.Keys = append(h.Keys, hk)
	}
	if h == nil {
		return nil
	}
	sort.Slice(h.Keys, func(i, j int) bool { return h.Keys[i].Since.Before(h.Keys[j].Since) })
	oldest := h.Keys[0].Since
	h.Oldest = &oldest
	if len(h.Keys) > maxHeldShown {
		h.Keys = h.Keys[:maxHeldShown]
	}
	return h
}

// gaugeHeld sets hookjet_ordering_keys_held: the held keys per endpoint,
// and 0 for an endpoint it reported before that has none now.
func (l *Owner) gaugeHeld() {
	counts := map[string]int{}
	l.mu.Lock()
	for kid, k := range l.keys {
		if k.why != "" {
			counts[l.eng.Label(kid.ep)]++
		}
	}
	for label := range l.reported {
		counts[label] += 0
	}
	l.reported = map[string]bool{}
	for label, n := range counts {
		if n > 0 {
			l.reported[label] = true
		}
	}
	owner := l.owner
	l.mu.Unlock()
	if !owner || l.o.Held == nil {
		return
	}
	for label, n := range counts {
		l.o.Held.WithLabelValues(label).Set(float64(n))
	}
}

package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/api"
)

// Only the lane's owner knows which keys are held (lane.go). Another
// process asks it over NATS, on heldSubject (no stream stores it), for
// every endpoint's held keys at once, so that an endpoint's view says the
// same whichever process serves it.
const (
	heldSubject = "hookjet.lane.held"
	// heldAsk bounds the wait for the owner's answer: without one (no
	// owner yet, or NATS down) the view has no held keys.
	heldAsk = 500 * time.Millisecond
)

// heldKeys returns the held keys of the endpoints ids, those with none
// left out: this process's when it delivers the ordered lane, the owner's
// otherwise. Nothing is asked when none of ids orders by key.
func (d *Dispatcher) heldKeys(ctx context.Context, ids []string) map[string]*api.HeldKeys {
	ordered := false
	for _, id := range ids {
		if e := d.endpoint(id); e != nil && e.set.Load().ep.Ordered() {
			ordered = true
			break
		}
	}
	if !ordered {
		return nil
	}
	if all, ok := d.lane.heldAll(); ok {
		return all
	}
	if d.o.NC == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, heldAsk)
	defer cancel()
	m, err := d.o.NC.RequestWithContext(ctx, heldSubject, nil)
	if err != nil {
		d.log.Debug("ask the ordered lane's owner for held keys", "err", err)
		return nil
	}
	var all map[string]*api.HeldKeys
	if err := json.Unmarshal(m.Data, &all); err != nil {
		d.log.Debug("held keys from the ordered lane's owner", "err", err)
		return nil
	}
	return all
}

// answerHeld answers other processes' questions for held keys while this
// process owns the lane, until Stop.
func (d *Dispatcher) answerHeld() error {
	if d.o.NC == nil {
		return nil
	}
	sub, err := d.o.NC.Subscribe(heldSubject, func(m *nats.Msg) {
		all, ok := d.lane.heldAll()
		if !ok {
			return // another process owns the lane: it answers
		}
		b, err := json.Marshal(all)
		if err == nil {
			_ = m.Respond(b)
		}
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", heldSubject, err)
	}
	context.AfterFunc(d.loopCtx, func() { _ = sub.Unsubscribe() })
	return nil
}

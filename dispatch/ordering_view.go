package dispatch

import (
	"context"

	"github.com/hookjet/hookjet/dispatch/lane"
)

// laneView is what waits in the ordered lane for one endpoint, as its
// owner sees it (lane.View).
type laneView = lane.View

// laneViews returns what waits in the ordered lane for the endpoints ids,
// those with nothing left out: this process's view when it delivers the
// lane, the owner's otherwise. Nothing is asked when none of ids orders by
// key (ids nil: when no endpoint does).
func (d *Dispatcher) laneViews(ctx context.Context, ids []string) map[string]laneView {
	if !d.anyOrdered(ids) {
		return nil
	}
	if all, ok := d.lane.Views(); ok {
		return all
	}
	if d.o.NC == nil {
		return nil
	}
	return lane.Ask(ctx, d.o.NC, d.log)
}

// anyOrdered reports whether one of the endpoints ids (nil: of every
// endpoint) orders by key.
func (d *Dispatcher) anyOrdered(ids []string) bool {
	if ids == nil {
		return d.ordered.Load() > 0
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
	return d.lane.Answer(d.life.loopCtx, d.o.NC)
}

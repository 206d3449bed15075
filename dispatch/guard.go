package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// A fan-out event is acked once all its deliveries are settled, so one slow
// request would keep the event unsettled, and a crash would then resend it,
// from any process, to every endpoint that already had it: duplicates
// bounded by the unsettled events, not by what was in flight. A guard
// bounds them: once a fan-out delivery has been in flight for guardAfter,
// its retry is stored ahead of time as a schedule (due after the request's
// timeout, on the subject its real retry would use) and the delivery counts
// as settled, so the event can be acked. When the request ends the guard is
// replaced by the real retry, or deleted after a success or a dead letter;
// a crash lets it fire, and only the deliveries that were in flight come
// again: at most max_in_flight per endpoint.
const (
	guardAfter = time.Second
	guardTick  = 500 * time.Millisecond
)

const (
	guardIdle    = iota // in flight, not guarded: done settles the event
	guardClaimed        // the attempt ended first: it is never guarded
	guardStored         // the guard is stored and the event settled
	guardDone           // settled
)

// guard is the settling of one fan-out delivery.
type guard struct {
	d      *fanout
	dl     *delivery
	settle func(ok bool) // the event's
	// end is called once the delivery is over, request included, after
	// settle: a guard settles the event early, but the request still holds
	// the payload, so the event's share of the byte budget waits for end.
	end   func()
	since time.Time // when its attempt began; zero before

	mu    sync.Mutex
	state int
	seq   uint64 // the guard schedule's sequence in HOOKJET_TASKS
}

// guarded gives dl a guard in front of its event's settle; end is called
// when the delivery is over.
func (d *fanout) guarded(dl *delivery, end func()) {
	g := &guard{d: d, dl: dl, settle: dl.Done, end: end}
	dl.g = g
	dl.Done = g.done
}

// done settles the delivery: the event, or, once guarded, the guard.
func (g *guard) done(ok bool) {
	g.d.unwatch(g)
	g.mu.Lock()
	state := g.state
	g.state = guardDone
	g.mu.Unlock()
	defer g.end()
	switch state {
	case guardIdle, guardClaimed:
		g.settle(ok)
	case guardStored:
		g.d.guards.landed(g.dl)
		if !ok {
			return // not settled (NATS failed, shutdown): the guard fires later
		}
		// Delivered, dead-lettered or handed on. A retry stored on the
		// guard's subject has already replaced it: then this finds nothing.
		seq := g.seq
		g.d.jobs(func() {
			ctx, cancel := context.WithTimeout(g.d.sendCtx, 5*time.Second)
			defer cancel()
			st, err := g.d.js.Stream(ctx, jetstream.TasksStream)
			if err == nil {
				err = st.DeleteMsg(ctx, seq)
			}
			if err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
				g.dl.Log(g.d.log, slog.LevelDebug, "remove a delivery's guard; it will be found delivered", "err", err)
			}
		})
	}
}

// claim is called when the attempt's result is in, before anything is
// stored for it: a guard being stored is waited for (so the real retry is
// stored after it, on its subject, and replaces it), and none is stored
// afterwards.
func (g *guard) claim() {
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.state == guardIdle {
		g.state = guardClaimed
	}
	g.mu.Unlock()
}

// claimUnstored claims g as claim does and reports whether its guard was
// not stored: the delivery still settles its event (true for no guard).
func (g *guard) claimUnstored() bool {
	if g == nil {
		return true
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state == guardIdle {
		g.state = guardClaimed
	}
	return g.state == guardClaimed
}

// store stores g's guard and settles the event, unless the delivery ended
// meanwhile.
func (g *guard) store() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.state != guardIdle {
		return
	}
	dl := g.dl
	at := g.d.now().Add(2*dl.s.ep.Timeout + 15*time.Second)
	ctx, cancel := context.WithTimeout(g.d.sendCtx, 5*time.Second)
	defer cancel()
	ack, err := g.d.js.PublishMsg(ctx, dl.Task(at))
	if err != nil {
		dl.Log(g.d.log, slog.LevelDebug, "guard not stored; the event stays unsettled", "err", err)
		return
	}
	g.seq = ack.Sequence
	g.state = guardStored
	// Noted before the event is settled: a sibling's failure may nak the
	// event, and its redelivery must find this request still in flight.
	g.d.guards.flew(dl)
	g.settle(true)
}

// guards holds the fan-out deliveries in flight, for the sweeper, and
// those whose guard settled their event while their request goes on.
type guards struct {
	mu sync.Mutex
	in map[*guard]struct{}
	// flying counts, by endpoint and event id, the guarded deliveries
	// still in flight: their event may come back (a sibling delivery
	// failed to be stored, and the event was put back), and its
	// delivery to such an endpoint is then already covered by the guard.
	flying map[flight]int
}

type flight struct{ endpoint, eventID string }

func (gs *guards) flew(dl *delivery) {
	gs.mu.Lock()
	if gs.flying == nil {
		gs.flying = map[flight]int{}
	}
	gs.flying[flight{dl.e.ID, dl.Event.ID}]++
	gs.mu.Unlock()
}

func (gs *guards) landed(dl *delivery) {
	k := flight{dl.e.ID, dl.Event.ID}
	gs.mu.Lock()
	if gs.flying[k]--; gs.flying[k] <= 0 {
		delete(gs.flying, k)
	}
	gs.mu.Unlock()
}

// inFlight reports whether a guarded delivery of event id to endpoint is
// still in flight in this process.
func (gs *guards) inFlight(endpoint, id string) bool {
	gs.mu.Lock()
	defer gs.mu.Unlock()
	return gs.flying[flight{endpoint, id}] > 0
}

// watch notes that dl's attempt begins.
func (d *fanout) watch(dl *delivery) {
	if dl.g == nil {
		return
	}
	dl.g.since = d.now()
	d.guards.mu.Lock()
	d.guards.in[dl.g] = struct{}{}
	d.guards.mu.Unlock()
}

func (d *fanout) unwatch(g *guard) {
	d.guards.mu.Lock()
	delete(d.guards.in, g)
	d.guards.mu.Unlock()
}

// runGuards stores the guards of deliveries in flight for longer than
// guardAfter, every guardTick until ctx ends.
func (d *fanout) runGuards(ctx context.Context) {
	t := time.NewTicker(guardTick)
	defer t.Stop()
	var due []*guard
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cutoff := d.now().Add(-guardAfter)
		due = due[:0]
		d.guards.mu.Lock()
		for g := range d.guards.in {
			if g.since.Before(cutoff) {
				due = append(due, g)
				delete(d.guards.in, g)
			}
		}
		d.guards.mu.Unlock()
		for _, g := range due {
			d.jobs(g.store)
		}
	}
}

package dispatch

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch/consume"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/jetstream"
)

// unsettledBytes bounds the payloads of the events being delivered,
// process-wide (the pulls and the events held ahead: consume's 32 MB).
const unsettledBytes = 128 << 20

// fanoutAckWait bounds how long an event may stay unsettled in one process
// before JetStream hands it to another (a crash): twice the longest timeout
// of the defaults and the config's endpoints plus 15 s, at least 30 s.
// Endpoints added later whose timeout does not fit are delivered through
// their tasks.
func fanoutAckWait(cfg *config.Config) time.Duration {
	longest := cfg.Defaults.Timeout
	for _, ep := range cfg.Endpoints {
		longest = max(longest, ep.Timeout)
	}
	return max(30*time.Second, 2*longest+15*time.Second)
}

// inFlightWait is how long a fan-out delivery waits for a slot of its
// endpoint's in-flight cap before it becomes a task: long enough that a
// busy healthy endpoint is not parked for a momentary peak, short enough
// that a slow one never holds an event for long.
const inFlightWait = 250 * time.Millisecond

// runFanout pulls HOOKJET_EVENTS through the shared consumer and fans each
// event out. A consumer that disappears (deleted by an operator) is created
// again, and the loss is logged.
//
// It pulls with Fetch, a request for every fanoutChunk events it has room
// ahead for (see fanoutAhead): while events wait in the log and room is
// free, pulls are at the server for all of it, and nothing is buffered in
// the client that the room does not hold. (Consume re-pulls from its own count of the events
// it asked for and not yet handed over, which a blocking handler lets drift
// above what the server still holds: the fan-out then sat idle with every
// event settled and no pull at the server until the missing heartbeat, 30 s
// later, made Consume pull again.)
func (d *fanout) runFanout(ctx context.Context, cons natsjs.Consumer) {
	for ctx.Err() == nil {
		err := consume.Run(ctx, cons, consume.Options{Conn: d.conn, MaxMsg: int64(d.maxMsg), Workers: d.fanoutWorkers(), Take: d.takeOn, Log: d.log})
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("consume events", "err", err)
		backoff.Sleep(ctx, time.Second)
		if !errors.Is(err, natsjs.ErrConsumerNotFound) && !errors.Is(err, natsjs.ErrConsumerDeleted) {
			continue
		}
		// Start after the ack floor last seen, not at the start of the log,
		// which would resend every event older than the ledger's TTL; the
		// ledger absorbs what this process sees again. Retried until
		// JetStream answers.
		from := d.floor.Load() + 1
		for ctx.Err() == nil {
			c, err := jetstream.EnsureFanoutConsumerFrom(ctx, d.js, d.ackWait, from)
			if err == nil {
				d.log.Warn("the fan-out consumer was missing; created it again", "consumer", jetstream.FanoutConsumer, "from_seq", from)
				cons = c
				break
			}
			d.log.Warn("create the fan-out consumer again", "err", err)
			backoff.Sleep(ctx, 2*time.Second)
		}
	}
}

// takeOn gives an event held ahead an unsettled slot and fans it out, or
// hands it back to JetStream: at shutdown, and when it was held for half of
// AckWait (the process was paused, and JetStream may have handed it to
// another process).
func (d *fanout) takeOn(ctx context.Context, p consume.Pulled) {
	if time.Since(p.At) < d.ackWait/2 {
		select {
		case d.unsettled <- struct{}{}:
			d.fanOut(ctx, p)
			return
		case <-ctx.Done():
		}
	}
	if err := p.Msg.Nak(); err != nil {
		d.log.Debug("hand back pulled event", "err", err)
	}
}

// fanoutWorkers is how many events this process fans out at once: more with
// nats.url, where the NATS calls of a fan-out (tasks parked) are network
// round trips.
func (d *fanout) fanoutWorkers() int {
	if d.shared != nil {
		// One per unsettled event: with R3 under load a task's publish
		// takes tens of milliseconds, and the rate is workers / round trip.
		return cap(d.unsettled)
	}
	return 4
}

// fanEvent settles one event of the fan-out: it is acked once every delivery
// is settled, or put back when one of them could not be (a NATS failure):
// deliveries already made are then recognised by the ledger, and tasks
// already stored by their Nats-Msg-Id.
type fanEvent struct {
	d    *fanout
	msg  natsjs.Msg
	size int64        // bytes taken from the dispatcher's byte budget
	left atomic.Int32 // deliveries not settled
	// holding counts the deliveries not over: a guard settles its
	// delivery while the request, which holds the payload, goes on, so
	// the bytes are given back when the last one is over, not settled.
	holding atomic.Int32
	failed  atomic.Bool
	// forsaken: a delivery was given up unattempted because the event
	// may be someone else's by now (see late): the event is not acked; it
	// is put back (settle) unless AckWait may have passed.
	forsaken atomic.Bool
	pulled   time.Time // when the pull that brought it was sent
}

// over notes that one of f's deliveries is over, request included.
func (f *fanEvent) over() {
	if f.holding.Add(-1) == 0 {
		f.d.unsettledBytes.Release(f.size)
	}
}

func (f *fanEvent) settle(ok bool) {
	if !ok {
		f.failed.Store(true)
	}
	if f.left.Add(-1) != 0 {
		return
	}
	if f.forsaken.Load() {
		// No ack: it would lose the forsaken delivery. A nak puts the
		// event back at once while the server cannot have handed it out
		// again yet (it does after AckWait); otherwise the event would
		// wait out the rest of AckWait, a stall at the end of a burst.
		// Forsaken again (a process that stays starved, or acks that stay
		// unanswered), it comes back later each time, so that it does not
		// spin through MaxDeliver to the safety net's dead letter without
		// an attempt.
		if time.Since(f.pulled) < f.d.ackWait*3/4 {
			if err := f.msg.NakWithDelay(forsakenDelay(f.msg)); err != nil {
				f.d.log.Debug("hand back forsaken event", "err", err)
			}
		}
	} else if f.failed.Load() {
		if err := f.msg.NakWithDelay(2*time.Second + backoff.Jitter(3*time.Second)); err != nil {
			f.d.log.Warn("nak event", "err", err)
		}
	} else if err := f.d.ackDelivered(f.msg); err != nil {
		f.d.log.Warn("ack event", "err", err)
	}
	<-f.d.unsettled
}

// forsakenDelay is how long a forsaken event waits before it comes back:
// at once the first time, then 200 ms more for each delivery, at most 5 s.
func forsakenDelay(msg natsjs.Msg) time.Duration {
	meta, err := msg.Metadata()
	if err != nil || meta.NumDelivered <= 1 {
		return 0
	}
	return min(time.Duration(meta.NumDelivered-1)*200*time.Millisecond, 5*time.Second)
}

// fanOut delivers one event to every endpoint whose patterns match it.
func (d *fanout) fanOut(ctx context.Context, p consume.Pulled) {
	msg := p.Msg
	meta, err := msg.Metadata()
	if err != nil {
		d.log.Error("event without metadata", "err", err)
		<-d.unsettled
		return
	}
	ev, noID := settle.EventOf(msg, meta)
	if noID && meta.NumDelivered == 1 {
		d.metrics.MissingID.Inc() // once per event: its first fan-out
	}
	if d.duplicate(&ev) {
		d.metrics.Duplicates.WithLabelValues("ledger").Inc()
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack duplicate event", "err", err)
		}
		<-d.unsettled
		return
	}
	var ids [8]string
	var buf [8]target
	targets := d.match.match(&ev, msg.Headers(), msg.Data(), ids[:0], buf[:0])
	if ev.BadTenant != "" {
		d.rejectBadTenant(msg, &ev, targets) // dispatch/tenant.go
		<-d.unsettled
		return
	}
	if why := d.match.check(&ev, msg.Data(), targets); why != "" {
		d.reject(msg, &ev, targets, "invalid", why) // dispatch/tenant.go
		<-d.unsettled
		return
	}
	if len(targets) == 0 {
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack event", "err", err)
		}
		<-d.unsettled
		return
	}
	f := &fanEvent{d: d, msg: msg, size: int64(len(msg.Data())), pulled: p.Sent}
	if !d.unsettledBytes.Acquire(ctx, f.size) {
		if err := msg.Nak(); err != nil {
			d.log.Debug("nak event at shutdown", "err", err)
		}
		<-d.unsettled
		return
	}
	f.left.Store(int32(len(targets)))
	f.holding.Store(int32(len(targets)))
	exhausted := meta.NumDelivered >= uint64(jetstream.EventsMaxDeliver-1)
	for _, t := range targets {
		if t.e == nil || d.guards.inFlight(t.id, ev.ID) {
			// Removed meanwhile, or an earlier delivery of this event is
			// still in flight there: the event came back because another
			// of its deliveries could not be stored, and this one is
			// covered by its guard.
			f.settle(true)
			f.over()
			continue
		}
		dl := newDelivery(t.e, t.s, &ev, settle.State{}, msg.Data(), msg.Headers())
		dl.Done = f.settle
		d.guarded(dl, f.over)
		if d.alreadyDelivered(dl) {
			continue
		}
		if ordered(dl) {
			// Its key's turn comes in the ordered lane (lane.go).
			d.ordered.enqueue(dl)
			continue
		}
		if exhausted {
			// The server is about to give up on the event after as many
			// deliveries: NATS failures, shutdowns and crashes, never
			// attempts (those are a task's). Hand every delivery on as a
			// task, which carries its own attempt count.
			d.settle.park(dl, "redelivered")
			continue
		}
		dl.fan = f // attempted only while f can still be settled (late)
		d.route(ctx, dl)
	}
}

// duplicate reports whether ev's id was already accepted as another message.
func (d *fanout) duplicate(ev *settle.Event) bool {
	_, dup, err := d.ledger.FirstSeen(ev.ID, ev.Seq)
	if err != nil {
		d.log.Warn("ledger lookup", "event_id", ev.ID, "err", err)
		return false
	}
	if !dup && d.shared != nil {
		// The ledger also holds the ids every other process accepted
		// (followed from HOOKJET_SEEN); tell them about this one.
		d.shared.announce(ev.ID, ev.Seq)
	}
	return dup
}

// alreadyDelivered settles dl at once when the ledger says its endpoint has
// it. It is checked on every delivery, not only redeliveries: a server that
// lost consumer state in a crash redelivers with a count of 1.
func (d *fanout) alreadyDelivered(dl *delivery) bool {
	done, err := d.ledger.Delivered(dl.e.ID, dl.Event.ID)
	if err != nil || !done {
		return false
	}
	d.metrics.Duplicates.WithLabelValues("delivered").Inc()
	dl.Done(true)
	return true
}

// route sends dl now if its endpoint can take it, waits briefly for an
// in-flight slot, or parks it as a task.
func (d *fanout) route(ctx context.Context, dl *delivery) {
	if 2*dl.s.ep.Timeout+15*time.Second > d.ackWait {
		d.settle.park(dl, "slow")
		return
	}
	adm, cause := d.gate.admit(dl.e, dl.s)
	switch cause {
	case "":
		d.gate.launch(ctx, dl, adm, false)
	case "in_flight":
		waits, fast := d.gate.startWaiting(dl.e, dl.s)
		if !waits {
			d.settle.park(dl, "in_flight")
			return
		}
		d.inflight.Add(1)
		go func() {
			defer d.inflight.Done()
			ok := dl.e.slots.acquire(ctx, inFlightWait)
			d.gate.stopWaiting(dl.e, fast)
			if !ok {
				d.settle.park(dl, "in_flight")
				return
			}
			adm, cause := d.gate.admitHolding(dl.e, dl.s)
			if cause != "" {
				d.settle.park(dl, cause)
				return
			}
			d.gate.launch(ctx, dl, adm, false)
		}()
	default:
		d.settle.park(dl, cause)
	}
}

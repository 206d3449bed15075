package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/dispatch/lane"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/jetstream"
)

// The engine's side of the ordered lane (package lane): what the fan-out
// hands it, and laneEngine, what it asks of the engine (lane.Engine).

// newLane makes d's part in the ordered lane. d.life.sendCtx is made.
func newLane(d *Dispatcher) *lane.Owner {
	o := lane.Options{JS: d.o.JS, NC: d.o.NC, Sends: d.life.sendCtx, Log: d.log, Now: d.now, Busy: settle.BusyCause,
		Share: jetstream.LaneBytes(d.tasks.Max()) / settle.EndpointShare, Shares: settle.EndpointShare}
	if d.o.Metrics != nil {
		o.Held = d.o.Metrics.OrderingHeld
	}
	return lane.New(laneEngine{d}, o)
}

// ordered reports whether dl goes through the lane: its endpoint orders by
// key and its event has one.
func ordered(dl *delivery) bool {
	return dl.s.ep.Ordered() && jetstream.OrderingKey(dl.Header) != ""
}

// laneMsg is dl's lane entry: its task with the lane's subject and id.
func laneMsg(dl *delivery, due time.Time) *nats.Msg {
	msg := dl.Task(time.Time{})
	lane.Into(msg, dl.e.ID, jetstream.OrderingKey(dl.Header), dl.State.Attempts)
	lane.SetDue(msg, due)
	return msg
}

// enqueue stores dl, a fan-out delivery, in the lane and settles it once
// stored; a refusal (the stream full, NATS failing) brings the event back
// (the fan-out's laneQueue).
func (x laneEngine) enqueue(dl *delivery) {
	d := x.d
	if dl.Forgotten() {
		return
	}
	why, r := d.lane.Reserve(dl.e.ID, dl.e.set.Load().ep.MaxBacklog, jetstream.OrderingKey(dl.Header), settle.TaskSize(len(dl.Data)))
	if why != "" {
		d.goJob(func() { d.settle.overflow(dl, why) })
		return
	}
	d.goJob(func() {
		err := d.lane.Enqueue(r, laneMsg(dl, time.Time{}))
		if lane.Full(err) {
			dl.State.Error = fmt.Sprintf("the ordered lane %s is full (%d bytes: an eighth of streams.tasks_max_bytes)", jetstream.LaneStream, jetstream.LaneBytes(d.tasks.Max()))
			d.settle.deadLetter(dl, "overflow")
			return
		}
		if err != nil {
			d.countDeferral(dl.e, "infrastructure")
			dl.Log(d.log, slog.LevelWarn, "ordered delivery not stored; the event comes back", "err", err)
			dl.Done(false)
			return
		}
		dl.Done(true)
	})
}

// laneReplay turns out, the task replaying a dead letter with headers src
// to endpoint e, into a front entry of the ordered lane when e orders by
// key and the dead letter has one: it goes before the key's waiting events
// (and releases the key's hold on it). It reports whether it did.
func laneReplay(out *nats.Msg, e *endpoint, src nats.Header) bool {
	key := jetstream.OrderingKey(src)
	if key == "" || !e.set.Load().ep.Ordered() {
		return false
	}
	lane.Into(out, e.ID, key, 0)
	lane.Front(out)
	return true
}

// ReleaseHold lets the key held by the dead letter of event eventID at
// endpoint id go on: its dead letter was discarded. Endpoints that do not
// order by key have nothing to release.
func (d *Dispatcher) ReleaseHold(ctx context.Context, id, eventID string) error {
	e := d.endpoint(id)
	if e == nil || !e.set.Load().ep.Ordered() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := d.o.JS.PublishMsg(ctx, lane.Release(id, eventID))
	return err
}

// laneEngine is the engine as the lane sees it (lane.Engine).
type laneEngine struct{ d *Dispatcher }

func (x laneEngine) MaxBacklog(id string) (int, bool) {
	e := x.d.endpoint(id)
	if e == nil {
		return 0, false
	}
	return e.set.Load().ep.MaxBacklog, true
}

func (x laneEngine) LastSuccess(id string) time.Time {
	h, _ := x.d.o.Breakers.Health(id)
	return h.LastSuccess
}

func (x laneEngine) AckFloor(ctx context.Context) (uint64, error) {
	info, err := x.d.fan.cons.Info(ctx)
	if err != nil {
		return 0, err
	}
	return info.AckFloor.Stream, nil
}

func (x laneEngine) Label(ep string) string { return x.d.series.Label(ep) }

func (x laneEngine) Go(f func()) {
	x.d.life.inflight.Add(1)
	go func() {
		defer x.d.life.inflight.Done()
		f()
	}()
}

// Attempt admits a key's first entry at its endpoint and launches the
// attempt, or says what keeps it from going. An entry past its endpoint's
// retry.max_age is dead-lettered as expired even while the endpoint does
// not admit it (disabled, breaker open).
func (x laneEngine) Attempt(ctx context.Context, a lane.Attempt) lane.Verdict {
	d := x.d
	e := d.endpoint(a.Endpoint)
	if e == nil {
		return lane.Verdict{Gone: true}
	}
	s := d.current(e)
	if d.now().Sub(a.Published) > s.ep.Retry.MaxAge && !a.Front {
		x.expire(ctx, a, e, s)
		return lane.Verdict{Started: true}
	}
	if cause, until := d.states.Blocked(e.ID, d.now()); cause != "" {
		wait := time.Second
		if !until.IsZero() {
			wait = min(wait, until.Sub(d.now()))
		}
		return lane.Verdict{Wait: wait, Why: cause}
	}
	if !e.slots.acquire(ctx, time.Second) {
		return lane.Verdict{}
	}
	adm, cause := d.gate.admitHolding(e, s)
	if cause != "" {
		return lane.Verdict{Wait: 100 * time.Millisecond, Why: cause}
	}
	// Reading the entry is a round trip: it goes with the attempt, on a
	// goroutine of its own (as many as the endpoint's in-flight slots), so
	// the lane's runner admits the next key meanwhile.
	x.Go(func() {
		dl, err := x.delivery(ctx, a, e, s)
		if dl == nil {
			adm.Release()
			a.Settle.Skip(err)
			return
		}
		d.gate.launch(ctx, dl, adm, true)
	})
	return lane.Verdict{Started: true}
}

// expire dead-letters a's entry, past retry.max_age, without an attempt.
func (x laneEngine) expire(ctx context.Context, a lane.Attempt, e *endpoint, s *settings) {
	dl, err := x.delivery(ctx, a, e, s)
	if dl == nil {
		a.Settle.Skip(err)
		return
	}
	dl.State.Error = fmt.Sprintf("not delivered within retry.max_age (%s)", s.ep.Retry.MaxAge)
	x.d.settle.deadLetter(dl, "expired")
}

// delivery reads a's entry and makes it e's delivery, settled through the
// lane; nil with the error when it cannot be read, or (nil error) when it
// is settled without an attempt: an earlier incarnation's, another
// tenant's, or one the ledger says this process delivered.
func (x laneEngine) delivery(ctx context.Context, a lane.Attempt, e *endpoint, s *settings) (*delivery, error) {
	d := x.d
	msg, err := a.Load(ctx)
	if err != nil {
		return nil, err
	}
	ev, st := settle.TaskOf(msg.Header, msg.Stored)
	if settle.NotForEndpoint(msg.Header, &ev, s.ep) {
		d.log.Info("ordered entry discarded: stored for another endpoint with this id (deleted since), or an event of another tenant", "endpoint", e.ID, "event_id", ev.ID)
		return nil, nil
	}
	if !a.Front && !strings.HasPrefix(ev.Key, settle.RedeliverKey) {
		// Delivered by this process before a crash that came before the
		// entry's deletion: settle it, as the fan-out would.
		if done, err := d.o.Ledger.Delivered(e.ID, ev.ID); err == nil && done {
			d.o.Metrics.Duplicates.WithLabelValues("delivered").Inc()
			return nil, nil
		}
	}
	dl := newDelivery(e, s, &ev, st, msg.Data, msg.Header)
	logf := func(level slog.Level, msg string, args ...any) { dl.Log(d.log, level, msg, args...) }
	dl.Done = func(ok bool) {
		o := lane.Outcome{OK: ok, Log: logf}
		if ok && dl.Dead && dl.s.ep.HoldsOnDeadLetter() {
			o.Hold = &lane.Hold{EventID: dl.Event.ID, EventKey: dl.Event.Key, Attempts: dl.State.Attempts}
		}
		a.Settle.Done(o)
	}
	dl.Again = func(wait time.Duration) {
		if dl.Forgotten() {
			return
		}
		at := d.now().Add(wait)
		if err := a.Settle.Retry(lane.Retry{Msg: laneMsg(dl, at), Wait: wait}); err != nil {
			dl.Log(d.log, slog.LevelWarn, "ordered retry not stored; the attempt comes again", "err", err)
			dl.Done(false)
			return
		}
		dl.Log(d.log, slog.LevelInfo, "delivery failed; retrying in its key's turn", "attempt", dl.State.Attempts, "status", dl.State.Status, "error", dl.State.Error, "retry_in", wait.Round(time.Millisecond), "retry_at", at.UTC().Format(time.RFC3339Nano))
	}
	return dl, nil
}

// Overflow dead-letters m, an entry of endpoint id never filed, as overflow
// because of why; done reports whether its dead letter was stored.
func (x laneEngine) Overflow(id string, m lane.Msg, why string, done func(ok bool)) {
	d := x.d
	e := d.endpoint(id)
	if e == nil {
		done(false)
		return
	}
	ev, st := settle.TaskOf(m.Header, m.Stored)
	dl := newDelivery(e, d.current(e), &ev, st, m.Data, m.Header)
	dl.Done = done
	dl.Again = func(time.Duration) { dl.Done(false) }
	d.settle.overflow(dl, why)
}

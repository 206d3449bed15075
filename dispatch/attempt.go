package dispatch

import (
	"context"
	"fmt"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/jetstream"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/tracing"
)

// delivery is one event on its way to one endpoint, from the fan-out or from
// a task. done settles its source exactly once: true when the delivery is
// finished with (delivered, dead-lettered, or handed on as a task), false
// when it must come back (a failure of NATS or a shutdown).
type delivery struct {
	e    *endpoint
	s    *settings
	ev   *event
	st   attemptState
	data []byte
	hdr  nats.Header
	done func(ok bool)
	g    *guard // fan-out deliveries: see guard.go; nil for tasks
	// again, for the ordered lane's deliveries, stores the retry due
	// after wait in the lane instead of as a schedule (lane_owner.go).
	again func(wait time.Duration)
	dead  bool // dead-lettered: set before done
	// fan is the event of a fan-out delivery routed straight to its
	// endpoint (route), nil otherwise: such a delivery is attempted only
	// while the event can still be settled (late).
	fan *fanEvent
}

func (dl *delivery) log(l *slog.Logger, level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := append([]any{"endpoint", dl.e.id, "event_id", dl.ev.id, "event_type", dl.ev.typ}, args...)
	l.Log(ctx, level, msg, attrs...)
}

// attempt makes one attempt of dl, which holds adm, and carries out what
// [decide] makes of the result. done is called once the request is over,
// before the result is carried out; not when no request is made.
func (d *Dispatcher) attempt(dl *delivery, adm *admission, done func()) {
	if d.late(dl) && dl.g.claimUnstored() {
		// Given up unattempted, holding adm: what a pause or a partition
		// makes this process repeat stays within max_in_flight.
		adm.release()
		dl.fan.forsaken.Store(true)
		dl.log(d.log, slog.LevelInfo, "fan-out delivery not attempted: the event may be another process's by now; it is put back")
		dl.done(false)
		return
	}
	ep := dl.s.ep
	if reason, why, ok := precheck(len(dl.data), d.maxPayload, ep.Settings, dl.ev.at, d.now()); !ok {
		// No request: claim the guard before dl.st changes, so that a
		// guard being stored meanwhile reads it whole, and none is stored
		// after.
		dl.g.claim()
		adm.release()
		if dl.st.Error == "" || reason == "rejected" {
			dl.st.Error = why
		}
		d.deadLetter(dl, reason)
		return
	}
	req := destination.Request{
		EventID:     dl.ev.id,
		EventType:   dl.ev.typ,
		Tenant:      dl.ev.tenant,
		OrderingKey: jetstream.OrderingKey(dl.hdr),
		ContentType: dl.hdr.Get(jetstream.HdrContentType),
		Payload:     dl.data,
	}
	// tracing: a span per attempt, child of the event's traceparent.
	span := d.o.Tracer.StartAttempt(d.sendCtx, tracing.Header(dl.hdr), tracing.Attempt{Endpoint: dl.e.id, EventType: dl.ev.typ, EventID: dl.ev.id, Number: dl.st.Attempts + 1, Replay: strings.HasPrefix(dl.ev.key, "r")})
	req.Trace = span.Header()
	adm.spend()
	res := dl.s.dest.Send(d.sendCtx, req)
	done()
	dl.g.claim()
	span.EndAttempt(&res)
	if d.sendCtx.Err() != nil {
		adm.release() // shutdown cancelled the request: not the endpoint's fault
		dl.done(false)
		return
	}
	st := &dl.st
	st.Attempts++
	if st.First.IsZero() {
		st.First = res.Sent
	}
	st.Last, st.Status = res.Sent, res.Status
	d.recordAttempt(dl, &res) // delivery log
	first := st.Attempts == 1
	d.observeAttempt(dl.e, res.Class.String(), first, res.Latency.Seconds(), res.Class != destination.Rejected)
	switch res.Class {
	case destination.Success:
		d.o.Breakers.Record(dl.e.id, breaker.Success, res.Latency, first)
		dl.e.last.Store(&attempt.LastDelivery{EventID: dl.ev.id, Status: res.Status, LatencyMS: ms(res.Latency), At: res.Sent.UTC()})
	case destination.Transient:
		d.o.Breakers.Record(dl.e.id, breaker.Failure, res.Latency, first)
	case destination.Rejected:
		d.o.Breakers.ReleaseProbe(dl.e.id, adm.probe)
	default:
		d.o.Breakers.Record(dl.e.id, breaker.Neutral, res.Latency, first)
	}
	adm.breaker = false
	d.hour.add(d.now(), res.Class == destination.Success)
	if res.Class != destination.Success {
		st.Error = res.Reason
	}
	act := decide(*st, &res, ep.Settings, dl.ev.at, d.now(), func(n int) time.Duration {
		return backoff.Full(ep.Retry.Base, ep.Retry.Cap, n-1, nil)
	})
	d.carryOut(dl, adm, act)
}

// late reports whether dl, a fan-out delivery about to be attempted, could
// no longer be settled in time: its event was pulled longer ago than half
// the fan-out's AckWait (this process was paused, or starved: the server
// has handed the event, or is about to hand it, to another process), or
// the NATS connection is down, so its ack cannot be sent now, or the
// server has not confirmed reading the acks written before. The checks
// are made holding an in-flight slot of the endpoint, so a pause or a
// partition right after them repeats at most max_in_flight deliveries
// there; without them every event the process holds unsettled (up to
// 2 x worker.concurrency) could be.
func (d *Dispatcher) late(dl *delivery) bool {
	if dl.fan == nil {
		return false
	}
	if time.Since(dl.fan.pulled) > time.Duration(d.fanoutHold.Load()) {
		return true
	}
	if d.acks == nil {
		// The embedded server's in-process connection: it is not cut
		// while the process runs, and asking it (IsConnected) would wait
		// for the connection's lock, held while the flusher hands its
		// buffer to the server through a synchronous pipe.
		return false
	}
	if !d.fanoutConn().IsConnected() {
		return true
	}
	// The acks written before may have been lost in a silent partition or
	// with a failed cluster node (ackproof.go): wait for their answers,
	// at most until the delivery would be late.
	return !d.acks.confirmed(dl.fan.pulled.Add(time.Duration(d.fanoutHold.Load())))
}

// carryOut does what act says. After a 2xx the endpoint's in-flight slot
// stays taken until the ledger has committed the delivery and the source is
// settled, so what a crash can resend is bounded by max_in_flight per
// endpoint, answered-but-unsettled deliveries included.
func (d *Dispatcher) carryOut(dl *delivery, adm *admission, act action) {
	switch act.Verb {
	case actAck:
		// The ledger's callback settles the source (and may queue a
		// guard's removal): Stop waits for it as for the delivery, so no
		// job is added once Stop's wait has seen nothing in flight.
		d.inflight.Add(1)
		d.o.Ledger.MarkDelivered(dl.e.id, dl.ev.id, func(err error) {
			defer d.inflight.Done()
			if err != nil {
				dl.log(d.log, slog.LevelWarn, "ledger write failed; settling anyway", "err", err)
			}
			dl.done(true)
			adm.release()
		})
		return
	case actRetry:
		if act.Hold {
			d.countDeferral(dl.e, "rate_limit")
			d.hold(dl.e.id, d.now().Add(act.Wait), "rate_limit")
		}
		adm.release()
		if dl.again != nil {
			dl.again(act.Wait)
			return
		}
		d.retry(dl, act.Wait)
	case actDeadLetter:
		adm.release()
		d.deadLetter(dl, act.Reason)
		if act.Disable {
			d.disable(dl.e.id, "gone: the endpoint answered 410")
		}
	}
}

// forgotten settles dl, storing nothing, when its endpoint was deleted
// through the admin API while dl was in flight: no one would take a task of
// it, and an endpoint created again with the id would.
func forgotten(dl *delivery) bool {
	if !dl.e.deleted.Load() {
		return false
	}
	dl.done(true)
	return true
}

// retry stores dl as a schedule that JetStream turns into a due task after
// wait, then settles the source.
func (d *Dispatcher) retry(dl *delivery, wait time.Duration) {
	if forgotten(dl) {
		return
	}
	if !d.reserve(dl, false) {
		return
	}
	at := d.now().Add(wait)
	if err := d.publish(taskFor(dl, at)); err != nil {
		d.unreserve(dl, false)
		dl.log(d.log, slog.LevelWarn, "retry not stored; the source comes back", "err", err)
		dl.done(false)
		return
	}
	d.stored(dl)
	d.drains.NoteRetry(dl.e.id, dl.ev.key, at)
	dl.done(true)
	dl.log(d.log, slog.LevelInfo, "delivery failed; retrying", "attempt", dl.st.Attempts, "status", dl.st.Status, "error", dl.st.Error, "retry_in", wait.Round(time.Millisecond), "retry_at", at.UTC().Format(time.RFC3339Nano))
}

// park stores dl as a due task on its endpoint's subject, where it waits
// without holding any shared consumer's ack slot until a drain takes it.
func (d *Dispatcher) park(dl *delivery, cause string) {
	if forgotten(dl) {
		return
	}
	d.countDeferral(dl.e, cause)
	busy := busyCause(cause)
	d.goJob(func() {
		if !d.reserve(dl, busy) {
			return
		}
		msg := taskFor(dl, time.Time{})
		if busy {
			msg.Header.Set(hdrBusy, cause)
		}
		if err := d.publish(msg); err != nil {
			d.unreserve(dl, busy)
			dl.log(d.log, slog.LevelWarn, "task not stored; the event comes back", "err", err)
			dl.done(false)
			return
		}
		d.stored(dl)
		d.recordEnd(dl, attempt.ClassParked, cause) // delivery log
		d.drains.Note(dl.e.id, time.Time{})
		dl.done(true)
	})
}

// publish stores msg and waits for the PubAck. It uses the send context, so
// it still works during the grace period of a shutdown.
func (d *Dispatcher) publish(msg *nats.Msg) error {
	_, err := d.publishSeq(msg)
	return err
}

// publishSeq is publish, with the stream sequence msg was stored at.
func (d *Dispatcher) publishSeq(msg *nats.Msg) (uint64, error) {
	ctx, cancel := context.WithTimeout(d.sendCtx, 5*time.Second)
	defer cancel()
	ack, err := d.o.JS.PublishMsg(ctx, msg)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// deadLetter copies dl to HOOKJET_DLQ and settles the source once the PubAck
// is in. The copy's Nats-Msg-Id depends only on the endpoint and the event,
// so a crash between the two steps neither loses nor duplicates it.
func (d *Dispatcher) deadLetter(dl *delivery, reason string) {
	id := dl.e.id
	out := deadLetterMsg(id, dl.ev, dl.st, reason, dl.data, dl.hdr)
	if inc := d.incarnationOf(dl); inc != "" {
		out.Header.Set(hdrIncarnation, inc) // whose dead letter it is: dispatch/deadletters.go
	}
	// tracing: a span for the move; the dead letter carries its traceparent.
	span := d.o.Tracer.StartDeadLetter(d.sendCtx, tracing.Header(dl.hdr), tracing.DeadLetter{Endpoint: id, EventType: dl.ev.typ, EventID: dl.ev.id, Reason: reason, Attempts: dl.st.Attempts})
	span.Inject(tracing.Header(out.Header))
	err := d.publish(out)
	span.End(err) // tracing
	if err != nil {
		d.countDeferral(dl.e, "infrastructure")
		dl.log(d.log, slog.LevelWarn, "dead-letter copy not stored; the source comes back", "err", fmt.Errorf("dead-letter copy: %w", err))
		dl.done(false)
		return
	}
	d.recordEnd(dl, attempt.ClassDeadLetter, reason) // delivery log
	if d.o.OnDeadLetter != nil {
		d.o.OnDeadLetter(id, dl.ev.id)
	}
	dl.dead = true
	dl.done(true)
	d.countDeadLetter(id, reason)
	dl.log(d.log, slog.LevelWarn, "dead-lettered", "reason", reason, "attempts", dl.st.Attempts, "status", dl.st.Status, "error", dl.st.Error)
	d.ops("dead_letter", map[string]any{"endpoint": id, "event_id": dl.ev.id, "event_type": dl.ev.typ, "reason": reason, "attempts": dl.st.Attempts})
}

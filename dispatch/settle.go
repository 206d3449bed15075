package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/tracing"
)

// settler is the settle stage: it carries out what [decide] makes of an
// attempt (ack, retry, dead-letter) and hands on deliveries that cannot be
// attempted now (park) or at all (deadLetter), recording each in the
// delivery log. Its collaborators are the few it needs: the ledger, the
// task store, the endpoints' shared state, the delivery log and the
// series.
type settler struct {
	log    *slog.Logger
	now    func() time.Time
	ctx    context.Context // the send context: settlement goes on in a shutdown's grace
	js     natsjs.JetStream
	ledger *dedupe.Ledger
	tasks  taskKeeper
	states stateKeeper
	rec    *recorder
	series *series
	tracer *tracing.Tracer
	// inflight is the engine's wait group of work Stop waits for.
	inflight *sync.WaitGroup
	// onDeadLetter is Options.OnDeadLetter (a test seam).
	onDeadLetter func(endpoint, eventID string)
}

// taskKeeper keeps deliveries as tasks in HOOKJET_TASKS: their bytes and
// bounds (bounds.go), the drains told they are due (package drain), and the pool
// of background NATS work (jobs.go).
type taskKeeper interface {
	reserve(dl *delivery, busy bool) bool
	unreserve(dl *delivery, busy bool)
	stored(dl *delivery)
	noteRetry(endpoint, key string, at time.Time)
	noteDue(endpoint string)
	goJob(f func())
}

// stateKeeper holds and disables endpoints for every process and
// publishes operational events (endpoint_state.go).
type stateKeeper interface {
	Hold(id string, until time.Time, cause string)
	Disable(id, reason string)
	Ops(kind string, body map[string]any)
}

// carryOut does what act says. After a 2xx the endpoint's in-flight slot
// stays taken until the ledger has committed the delivery and the source is
// settled, so what a crash can resend is bounded by max_in_flight per
// endpoint, answered-but-unsettled deliveries included.
func (t *settler) carryOut(dl *delivery, adm *admission, act action) {
	switch act.Verb {
	case actAck:
		// The ledger's callback settles the source (and may queue a
		// guard's removal): Stop waits for it as for the delivery, so no
		// job is added once Stop's wait has seen nothing in flight.
		t.inflight.Add(1)
		t.ledger.MarkDelivered(dl.e.id, dl.ev.id, func(err error) {
			defer t.inflight.Done()
			if err != nil {
				dl.log(t.log, slog.LevelWarn, "ledger write failed; settling anyway", "err", err)
			}
			dl.done(true)
			adm.release()
		})
		return
	case actRetry:
		if act.Hold {
			t.series.countDeferral(dl.e, "rate_limit")
			t.states.Hold(dl.e.id, t.now().Add(act.Wait), "rate_limit")
		}
		adm.release()
		if dl.again != nil {
			dl.again(act.Wait)
			return
		}
		t.retry(dl, act.Wait)
	case actDeadLetter:
		adm.release()
		t.deadLetter(dl, act.Reason)
		if act.Disable {
			t.states.Disable(dl.e.id, "gone: the endpoint answered 410")
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
func (t *settler) retry(dl *delivery, wait time.Duration) {
	if forgotten(dl) {
		return
	}
	if !t.tasks.reserve(dl, false) {
		return
	}
	at := t.now().Add(wait)
	if err := t.publish(taskFor(dl, at)); err != nil {
		t.tasks.unreserve(dl, false)
		dl.log(t.log, slog.LevelWarn, "retry not stored; the source comes back", "err", err)
		dl.done(false)
		return
	}
	t.tasks.stored(dl)
	t.tasks.noteRetry(dl.e.id, dl.ev.key, at)
	dl.done(true)
	dl.log(t.log, slog.LevelInfo, "delivery failed; retrying", "attempt", dl.st.Attempts, "status", dl.st.Status, "error", dl.st.Error, "retry_in", wait.Round(time.Millisecond), "retry_at", at.UTC().Format(time.RFC3339Nano))
}

// park stores dl as a due task on its endpoint's subject, where it waits
// without holding any shared consumer's ack slot until a drain takes it.
func (t *settler) park(dl *delivery, cause string) {
	if forgotten(dl) {
		return
	}
	t.series.countDeferral(dl.e, cause)
	busy := busyCause(cause)
	t.tasks.goJob(func() {
		if !t.tasks.reserve(dl, busy) {
			return
		}
		msg := taskFor(dl, time.Time{})
		if busy {
			msg.Header.Set(hdrBusy, cause)
		}
		if err := t.publish(msg); err != nil {
			t.tasks.unreserve(dl, busy)
			dl.log(t.log, slog.LevelWarn, "task not stored; the event comes back", "err", err)
			dl.done(false)
			return
		}
		t.tasks.stored(dl)
		t.rec.end(dl, attempt.ClassParked, cause) // delivery log
		t.tasks.noteDue(dl.e.id)
		dl.done(true)
	})
}

// publish stores msg and waits for the PubAck. It uses the send context, so
// it still works during the grace period of a shutdown.
func (t *settler) publish(msg *nats.Msg) error {
	_, err := t.publishSeq(msg)
	return err
}

// publishSeq is publish, with the stream sequence msg was stored at.
func (t *settler) publishSeq(msg *nats.Msg) (uint64, error) {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	ack, err := t.js.PublishMsg(ctx, msg)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// deadLetter copies dl to HOOKJET_DLQ and settles the source once the PubAck
// is in. The copy's Nats-Msg-Id depends only on the endpoint and the event,
// so a crash between the two steps neither loses nor duplicates it.
func (t *settler) deadLetter(dl *delivery, reason string) {
	id := dl.e.id
	out := deadLetterMsg(id, dl.ev, dl.st, reason, dl.data, dl.hdr)
	if inc := incarnationOf(dl, t.rec.eps); inc != "" {
		out.Header.Set(hdrIncarnation, inc) // whose dead letter it is: dispatch/deadletters.go
	}
	// tracing: a span for the move; the dead letter carries its traceparent.
	span := t.tracer.StartDeadLetter(t.ctx, tracing.Header(dl.hdr), tracing.DeadLetter{Endpoint: id, EventType: dl.ev.typ, EventID: dl.ev.id, Reason: reason, Attempts: dl.st.Attempts})
	span.Inject(tracing.Header(out.Header))
	err := t.publish(out)
	span.End(err) // tracing
	if err != nil {
		t.series.countDeferral(dl.e, "infrastructure")
		dl.log(t.log, slog.LevelWarn, "dead-letter copy not stored; the source comes back", "err", fmt.Errorf("dead-letter copy: %w", err))
		dl.done(false)
		return
	}
	t.rec.end(dl, attempt.ClassDeadLetter, reason) // delivery log
	if t.onDeadLetter != nil {
		t.onDeadLetter(id, dl.ev.id)
	}
	dl.dead = true
	dl.done(true)
	t.series.countDeadLetter(id, reason)
	dl.log(t.log, slog.LevelWarn, "dead-lettered", "reason", reason, "attempts", dl.st.Attempts, "status", dl.st.Status, "error", dl.st.Error)
	t.states.Ops("dead_letter", map[string]any{"endpoint": id, "event_id": dl.ev.id, "event_type": dl.ev.typ, "reason": reason, "attempts": dl.st.Attempts})
}

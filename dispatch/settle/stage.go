package settle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/tracing"
)

// Stage is the settle stage: it carries out what [Decide] makes of an
// attempt (ack, retry, dead-letter) and hands on deliveries that cannot be
// attempted now (Park) or at all (DeadLetter), recording each in the
// delivery log. Its collaborators are the few it needs: the ledger, the
// task space and the drains told of what is due, the endpoints' shared
// state, the delivery log and the series.
type Stage struct {
	log      *slog.Logger
	now      func() time.Time
	ctx      context.Context
	js       Publisher
	ledger   Ledger
	space    *Space
	drains   Drains
	states   States
	rec      *Records
	series   *Series
	tracer   *tracing.Tracer
	inflight *sync.WaitGroup
	jobs     func(func())
	onDead   func(endpoint, eventID string)
}

// Options are what a Stage is built from. Every field is required except
// Log, Now, Tracer and OnDeadLetter.
type Options struct {
	Log *slog.Logger
	Now func() time.Time // nil: time.Now
	// Ctx is the send context: settlement goes on in a shutdown's grace.
	Ctx     context.Context
	JS      Publisher
	Ledger  Ledger
	Space   *Space
	Drains  Drains
	States  States
	Records *Records
	Series  *Series
	Tracer  *tracing.Tracer // nil: tracing off
	// Inflight is the engine's wait group of work its Stop waits for.
	Inflight *sync.WaitGroup
	// Jobs runs f on the pool of background NATS work, counted in
	// Inflight.
	Jobs func(f func())
	// OnDeadLetter is called after a dead letter is stored and before its
	// source is settled (a test seam); nil: nothing.
	OnDeadLetter func(endpoint, eventID string)
}

// Publisher stores a message in a stream and waits for its PubAck
// (natsjs.JetStream).
type Publisher interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error)
}

// Ledger is the dedupe ledger's group commit of delivered events
// (dedupe.Ledger).
type Ledger interface {
	MarkDelivered(endpoint, eventID string, done func(error))
}

// Drains are told of tasks that are due now or scheduled (package
// dispatch/drain).
type Drains interface {
	Note(endpoint string, at time.Time)
	NoteRetry(endpoint, key string, at time.Time)
}

// States holds and disables endpoints for every process and publishes
// operational events (package dispatch/epstate).
type States interface {
	Hold(id string, until time.Time, cause string)
	Disable(id, reason string)
	Ops(kind string, body map[string]any)
}

// Admission is what an admitted delivery holds (its endpoint's in-flight
// slot, rate-limit token and breaker permission); Release gives it back.
type Admission interface {
	Release()
}

// New builds the settle stage.
func New(o Options) *Stage {
	t := &Stage{
		log: o.Log, now: o.Now, ctx: o.Ctx, js: o.JS, ledger: o.Ledger, space: o.Space, drains: o.Drains, states: o.States,
		rec: o.Records, series: o.Series, tracer: o.Tracer, inflight: o.Inflight, jobs: o.Jobs, onDead: o.OnDeadLetter,
	}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.now == nil {
		t.now = time.Now
	}
	return t
}

// Records is the stage's writer of the delivery log.
func (t *Stage) Records() *Records { return t.rec }

// CarryOut does what act says. After a 2xx the endpoint's in-flight slot
// stays taken until the ledger has committed the delivery and the source is
// settled, so what a crash can resend is bounded by max_in_flight per
// endpoint, answered-but-unsettled deliveries included.
func (t *Stage) CarryOut(dl *Delivery, adm Admission, act Action) {
	switch act.Verb {
	case Ack:
		// The ledger's callback settles the source (and may queue a
		// guard's removal): Stop waits for it as for the delivery, so no
		// job is added once Stop's wait has seen nothing in flight.
		t.inflight.Add(1)
		t.ledger.MarkDelivered(dl.Endpoint.ID, dl.Event.ID, func(err error) {
			defer t.inflight.Done()
			if err != nil {
				dl.Log(t.log, slog.LevelWarn, "ledger write failed; settling anyway", "err", err)
			}
			dl.Done(true)
			adm.Release()
		})
		return
	case Retry:
		if act.Hold {
			t.series.CountDeferral(dl.Endpoint, "rate_limit")
			t.states.Hold(dl.Endpoint.ID, t.now().Add(act.Wait), "rate_limit")
		}
		adm.Release()
		if dl.Again != nil {
			dl.Again(act.Wait)
			return
		}
		t.retry(dl, act.Wait)
	case DeadLetter:
		adm.Release()
		t.DeadLetter(dl, act.Reason)
		if act.Disable {
			t.states.Disable(dl.Endpoint.ID, "gone: the endpoint answered 410")
		}
	}
}

// retry stores dl as a schedule that JetStream turns into a due task after
// wait, then settles the source.
func (t *Stage) retry(dl *Delivery, wait time.Duration) {
	if dl.Forgotten() {
		return
	}
	if !t.reserve(dl, false) {
		return
	}
	at := t.now().Add(wait)
	if err := t.Publish(dl.Task(at)); err != nil {
		t.unreserve(dl, false)
		dl.Log(t.log, slog.LevelWarn, "retry not stored; the source comes back", "err", err)
		dl.Done(false)
		return
	}
	t.stored(dl)
	t.drains.NoteRetry(dl.Endpoint.ID, dl.Event.Key, at)
	dl.Done(true)
	dl.Log(t.log, slog.LevelInfo, "delivery failed; retrying", "attempt", dl.State.Attempts, "status", dl.State.Status, "error", dl.State.Error, "retry_in", wait.Round(time.Millisecond), "retry_at", at.UTC().Format(time.RFC3339Nano))
}

// Park stores dl as a due task on its endpoint's subject, where it waits
// without holding any shared consumer's ack slot until a drain takes it.
func (t *Stage) Park(dl *Delivery, cause string) {
	if dl.Forgotten() {
		return
	}
	t.series.CountDeferral(dl.Endpoint, cause)
	busy := BusyCause(cause)
	t.jobs(func() {
		if !t.reserve(dl, busy) {
			return
		}
		msg := dl.Task(time.Time{})
		if busy {
			msg.Header.Set(HdrBusy, cause)
		}
		if err := t.Publish(msg); err != nil {
			t.unreserve(dl, busy)
			dl.Log(t.log, slog.LevelWarn, "task not stored; the event comes back", "err", err)
			dl.Done(false)
			return
		}
		t.stored(dl)
		t.rec.End(dl, attempt.ClassParked, cause) // delivery log
		t.drains.Note(dl.Endpoint.ID, time.Time{})
		dl.Done(true)
	})
}

// Publish stores msg and waits for the PubAck. It uses the send context, so
// it still works during the grace period of a shutdown.
func (t *Stage) Publish(msg *nats.Msg) error {
	ctx, cancel := context.WithTimeout(t.ctx, 5*time.Second)
	defer cancel()
	_, err := t.js.PublishMsg(ctx, msg)
	return err
}

// DeadLetter copies dl to HOOKJET_DLQ and settles the source once the
// PubAck is in. The copy's Nats-Msg-Id depends only on the endpoint and the
// event, so a crash between the two steps neither loses nor duplicates it.
func (t *Stage) DeadLetter(dl *Delivery, reason string) {
	id := dl.Endpoint.ID
	out := DeadLetterMsg(id, dl.Event, dl.State, reason, dl.Data, dl.Header)
	if inc := dl.incarnation(t.rec.eps); inc != "" {
		out.Header.Set(jetstream.HdrIncarnation, inc) // whose dead letter it is (package dispatch/query)
	}
	// tracing: a span for the move; the dead letter carries its traceparent.
	span := t.tracer.StartDeadLetter(t.ctx, tracing.Header(dl.Header), tracing.DeadLetter{Endpoint: id, EventType: dl.Event.Type, EventID: dl.Event.ID, Reason: reason, Attempts: dl.State.Attempts})
	span.Inject(tracing.Header(out.Header))
	err := t.Publish(out)
	span.End(err) // tracing
	if err != nil {
		t.series.CountDeferral(dl.Endpoint, "infrastructure")
		dl.Log(t.log, slog.LevelWarn, "dead-letter copy not stored; the source comes back", "err", fmt.Errorf("dead-letter copy: %w", err))
		dl.Done(false)
		return
	}
	t.rec.End(dl, attempt.ClassDeadLetter, reason) // delivery log
	if t.onDead != nil {
		t.onDead(id, dl.Event.ID)
	}
	dl.Dead = true
	dl.Done(true)
	t.series.CountDeadLetter(id, reason)
	dl.Log(t.log, slog.LevelWarn, "dead-lettered", "reason", reason, "attempts", dl.State.Attempts, "status", dl.State.Status, "error", dl.State.Error)
	t.states.Ops("dead_letter", map[string]any{"endpoint": id, "event_id": dl.Event.ID, "event_type": dl.Event.Type, "reason": reason, "attempts": dl.State.Attempts})
}

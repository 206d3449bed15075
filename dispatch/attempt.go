package dispatch

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/hookjet/hookjet/attempt"

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
	// after wait in the lane instead of as a schedule (dispatch/lane).
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

// sendStage is the send stage: one attempt of an admitted delivery through
// its endpoint's destination, its result noted (breaker, latency, series,
// the delivery log) and handed to settlement.
type sendStage struct {
	log        *slog.Logger
	now        func() time.Time
	ctx        context.Context // the send context, cancelled when a shutdown's grace is over
	maxPayload int             // security.max_payload_bytes
	fan        fanTimer
	breakers   *breaker.Registry
	tracer     *tracing.Tracer
	rec        *recorder
	series     *series
	hour       *hourStats
	settle     *settler
}

// fanTimer is what the send stage asks the fan-out (fanout.go, guard.go):
// whether a fan-out delivery could still be settled in time, and to guard
// one about to be attempted.
type fanTimer interface {
	late(dl *delivery) bool
	watch(dl *delivery)
}

// watch guards dl, a fan-out delivery about to be attempted.
func (d *sendStage) watch(dl *delivery) { d.fan.watch(dl) }

// attempt makes one attempt of dl, which holds adm, and carries out what
// [decide] makes of the result. done is called once the request is over,
// before the result is carried out; not when no request is made.
func (d *sendStage) attempt(dl *delivery, adm *admission, done func()) {
	if d.fan.late(dl) && dl.g.claimUnstored() {
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
		d.settle.deadLetter(dl, reason)
		return
	}
	req := shape(dl)
	// tracing: a span per attempt, child of the event's traceparent.
	span := d.tracer.StartAttempt(d.ctx, tracing.Header(dl.hdr), tracing.Attempt{Endpoint: dl.e.id, EventType: dl.ev.typ, EventID: dl.ev.id, Number: dl.st.Attempts + 1, Replay: strings.HasPrefix(dl.ev.key, "r")})
	req.Trace = span.Header()
	adm.spend()
	res := dl.s.dest.Send(d.ctx, req)
	done()
	dl.g.claim()
	span.EndAttempt(&res)
	if d.ctx.Err() != nil {
		adm.release() // shutdown cancelled the request: not the endpoint's fault
		dl.done(false)
		return
	}
	st := &dl.st
	if !res.Unsent { // a failed token fetch is not an attempt
		st.Attempts++
	}
	if st.First.IsZero() {
		st.First = res.Sent
	}
	st.Last, st.Status = res.Sent, res.Status
	d.rec.attempt(dl, &res) // delivery log
	first := st.Attempts == 1
	d.series.observeAttempt(dl.e, res.Class.String(), first, res.Latency.Seconds(), res.Class != destination.Rejected && !res.Unsent)
	switch {
	case res.Unsent, res.Class == destination.Rejected, res.Class == destination.Auth:
		d.breakers.ReleaseProbe(dl.e.id, adm.probe) // nothing reached the receiver: not the breaker's
	case res.Class == destination.Success:
		d.breakers.Record(dl.e.id, breaker.Success, res.Latency, first)
		dl.e.last.Store(&attempt.LastDelivery{EventID: dl.ev.id, Status: res.Status, LatencyMS: ms(res.Latency), At: res.Sent.UTC()})
	case res.Class == destination.Transient:
		d.breakers.Record(dl.e.id, breaker.Failure, res.Latency, first)
	default:
		d.breakers.Record(dl.e.id, breaker.Neutral, res.Latency, first)
	}
	adm.breaker = false
	d.hour.add(d.now(), res.Class == destination.Success)
	if res.Class != destination.Success {
		st.Error = res.Reason
	}
	act := decide(*st, &res, ep.Settings, dl.ev.at, d.now(), func(n int) time.Duration {
		return backoff.Full(ep.Retry.Base, ep.Retry.Cap, n-1, nil)
	})
	d.settle.carryOut(dl, adm, act)
}

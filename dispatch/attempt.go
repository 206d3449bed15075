package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/dispatch/settle"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/tracing"
)

// delivery is one event on its way to one endpoint, from the fan-out or from
// a task: settlement's part (the event, its attempt state, payload and
// headers, and how its source is settled: package settle) and the engine's
// (the endpoint's runtime and settings, the fan-out's guard and event).
type delivery struct {
	settle.Delivery
	e *endpoint
	s *settings
	g *guard // fan-out deliveries: see guard.go; nil for tasks
	// fan is the event of a fan-out delivery routed straight to its
	// endpoint (route), nil otherwise: such a delivery is attempted only
	// while the event can still be settled (late).
	fan *fanEvent
}

// newDelivery is a delivery of ev to e with settings s.
func newDelivery(e *endpoint, s *settings, ev *settle.Event, st settle.State, data []byte, hdr nats.Header) *delivery {
	dl := &delivery{e: e, s: s}
	dl.Delivery = settle.Delivery{Endpoint: &e.Endpoint, Config: s.ep, Event: ev, State: st, Data: data, Header: hdr}
	return dl
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
	rec        *settle.Records
	series     *settle.Series
	hour       *hourStats
	settle     settler
	shape      *shaper
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
// [settle.Decide] makes of the result. done is called once the request is over,
// before the result is carried out; not when no request is made.
func (d *sendStage) attempt(dl *delivery, adm *admission, done func()) {
	if d.fan.late(dl) && dl.g.claimUnstored() {
		// Given up unattempted, holding adm: what a pause or a partition
		// makes this process repeat stays within max_in_flight.
		adm.Release()
		dl.fan.forsaken.Store(true)
		dl.Log(d.log, slog.LevelInfo, "fan-out delivery not attempted: the event may be another process's by now; it is put back")
		dl.Done(false)
		return
	}
	ep := dl.s.ep
	if reason, why, ok := settle.Precheck(len(dl.Data), d.maxPayload, ep.Settings, dl.Event.At, d.now()); !ok {
		// No request: claim the guard before dl.State changes, so that a
		// guard being stored meanwhile reads it whole, and none is stored
		// after.
		dl.g.claim()
		adm.Release()
		if dl.State.Error == "" || reason == "rejected" {
			dl.State.Error = why
		}
		d.settle.deadLetter(dl, reason)
		return
	}
	req, err := d.shape.shape(d.ctx, dl)
	if err != nil {
		d.unshaped(dl, adm, err)
		return
	}
	// tracing: a span per attempt, child of the event's traceparent.
	span := d.tracer.StartAttempt(d.ctx, tracing.Header(dl.Header), tracing.Attempt{Endpoint: dl.e.ID, EventType: dl.Event.Type, EventID: dl.Event.ID, Number: dl.State.Attempts + 1, Replay: strings.HasPrefix(dl.Event.Key, "r")})
	req.Trace = span.Header()
	adm.spend()
	res := dl.s.dest.Send(d.ctx, req)
	done()
	dl.g.claim()
	span.EndAttempt(&res)
	if d.ctx.Err() != nil {
		adm.Release() // shutdown cancelled the request: not the endpoint's fault
		dl.Done(false)
		return
	}
	st := &dl.State
	if !res.Unsent { // a failed token fetch is not an attempt
		st.Attempts++
	}
	if st.First.IsZero() {
		st.First = res.Sent
	}
	st.Last, st.Status = res.Sent, res.Status
	d.rec.Attempt(&dl.Delivery, &res) // delivery log
	first := st.Attempts == 1
	d.series.ObserveAttempt(&dl.e.Endpoint, res.Class.String(), first, res.Latency.Seconds(), res.Class != destination.Rejected && !res.Unsent)
	switch {
	case res.Unsent, res.Class == destination.Rejected, res.Class == destination.Auth:
		d.breakers.ReleaseProbe(dl.e.ID, adm.probe) // nothing reached the receiver: not the breaker's
	case res.Class == destination.Success:
		d.breakers.Record(dl.e.ID, breaker.Success, res.Latency, first)
		dl.e.last.Store(&attempt.LastDelivery{EventID: dl.Event.ID, Status: res.Status, LatencyMS: settle.Millis(res.Latency), At: res.Sent.UTC()})
	case res.Class == destination.Transient:
		d.breakers.Record(dl.e.ID, breaker.Failure, res.Latency, first)
	default:
		d.breakers.Record(dl.e.ID, breaker.Neutral, res.Latency, first)
	}
	adm.breaker = false
	d.hour.add(d.now(), res.Class == destination.Success)
	if res.Class != destination.Success {
		st.Error = res.Reason
	}
	act := settle.Decide(*st, &res, ep.Settings, dl.Event.At, d.now(), func(n int) time.Duration {
		return backoff.Full(ep.Retry.Base, ep.Retry.Cap, n-1, nil)
	})
	d.settle.carryOut(dl, adm, act)
}

// unshaped settles dl, which the shape stage did not make a request of,
// without an attempt: cancelled by the endpoint's transform (delivered with
// nothing sent: one cancelled record), or the transform failed (dead-lettered
// as transform, with the script's error), or the shutdown's grace is over.
func (d *sendStage) unshaped(dl *delivery, adm *admission, err error) {
	dl.g.claim()
	switch {
	case d.ctx.Err() != nil:
		adm.Release()
		dl.Done(false)
	case errors.Is(err, errCancelled):
		d.rec.End(&dl.Delivery, attempt.ClassCancelled, "cancelled")
		d.settle.carryOut(dl, adm, settle.Action{Verb: settle.Ack})
	default:
		adm.Release()
		dl.State.Error = err.Error()
		d.settle.deadLetter(dl, "transform")
	}
}

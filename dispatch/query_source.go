package dispatch

import (
	"context"
	"strconv"
	"time"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/dispatch/epstate"
	"github.com/hookjet/hookjet/dispatch/query"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/tracing"
)

// The operator's queries are a room of their own (package query, below
// the engine); querySource tells them what the engine keeps in memory,
// takes back the dead letters a replay hands it, and sets the gauges the
// queries read.

// Queries answers the operator's questions about this engine: endpoint
// status, summary, waits, dead letters, replay, readiness and the gauges.
func (d *Dispatcher) Queries() *query.Queries { return d.queries }

// newQueries builds d's queries.
func newQueries(d *Dispatcher) *query.Queries {
	src := querySource{d}
	return query.New(query.Options{
		Source: src, Requeue: src, Gauges: src, JS: d.o.JS, NC: d.o.NC, Ledger: d.o.Ledger,
		Breakers: d.o.Breakers, Log: d.log, Now: d.now,
	})
}

// querySource is the engine as package query reads it.
type querySource struct{ d *Dispatcher }

func (q querySource) IDs() []string { return q.d.table.IDs() }

func (q querySource) Endpoint(id string, now time.Time) (query.Endpoint, bool) {
	e := q.d.endpoint(id)
	if e == nil {
		return query.Endpoint{}, false
	}
	return q.facts(e, now), true
}

func (q querySource) Each(now time.Time, fn func(query.Endpoint)) {
	q.d.mu.RLock()
	eps := make([]*endpoint, 0, len(q.d.eps))
	for _, e := range q.d.eps {
		eps = append(eps, e)
	}
	q.d.mu.RUnlock()
	for _, e := range eps {
		fn(q.facts(e, now))
	}
}

// facts is what the engine knows of e at now.
func (q querySource) facts(e *endpoint, now time.Time) query.Endpoint {
	s, st := e.set.Load(), q.d.states.Get(e.ID)
	f := query.Endpoint{
		Config:   s.ep,
		Disabled: st.Disabled, DisabledReason: st.Reason,
		HoldUntil: st.HoldUntil, HoldCause: st.HoldCause,
		InFlight: e.slots.inUse(), LastDelivery: e.last.Load(),
	}
	if s.limiter != nil {
		f.RateLimit, f.Tokens = float64(s.limiter.Limit()), s.limiter.TokensAt(now)
	}
	f.Taken, f.TakenUntil = q.d.drains.TakenWait(e.ID, now)
	return f
}

func (q querySource) Owner(id string) (query.Owner, bool) {
	e := q.d.endpoint(id)
	if e == nil {
		return query.Owner{}, false
	}
	ep := e.set.Load().ep
	return query.Owner{Incarnation: settle.Incarnation(ep.CreatedAt), Tenant: ep.Tenant}, true
}

// Backlogs visits the endpoints with waiting tasks only (settle.Backlogged):
// the others have nothing to add.
func (q querySource) Backlogs(fn func(id string, tasks int64)) {
	q.d.backlogged.Each(func(e *settle.Endpoint, n int64) { fn(e.ID, n) })
}

func (q querySource) FirstRetry(id string) time.Time { return q.d.drains.FirstRetry(id) }

func (q querySource) LastTest(id string) (attempt.Record, bool) { return q.d.send.rec.LastTest(id) }

func (q querySource) Process(now time.Time) query.Process {
	d := q.d
	d.mu.RLock()
	p := query.Process{Endpoints: len(d.eps), InFlight: d.gate.inFlightN.Load()}
	d.mu.RUnlock()
	d.states.All(func(id string, st epstate.State) {
		if st.Disabled {
			p.Disabled++
			if d.endpoint(id) != nil {
				p.DisabledInForce++
			}
		}
	})
	p.DeliveredLastHour, p.FailedLastHour = d.hour.sum(now)
	return p
}

func (q querySource) Lane(ctx context.Context, ids []string) map[string]query.LaneView {
	views := q.d.laneViews(ctx, ids) // ordering_view.go
	if views == nil {
		return nil
	}
	out := make(map[string]query.LaneView, len(views))
	for id, v := range views {
		out[id] = query.LaneView{Waiting: v.Waiting, Retrying: v.Retrying, Oldest: v.Oldest, Held: v.Held}
	}
	return out
}

func (q querySource) Match(tenant, typ string) []string { return q.d.table.Match(tenant, typ, nil) }

func (q querySource) NoteAckFloor(seq uint64) { q.d.fan.floor.Store(seq) }

// Requeue stores dead letter m as a task of its endpoint (a replay),
// with fresh attempts; false when its endpoint is not in force.
func (q querySource) Requeue(ctx context.Context, m jetstream.DLQMsg) (bool, error) {
	d, e := q.d, m.Entry
	cur := d.endpoint(e.Endpoint)
	if cur == nil {
		return false, nil
	}
	ev := settle.Event{ID: e.EventID, Type: e.EventType, Key: "r" + strconv.FormatUint(e.Seq, 10), At: d.now(), Tenant: e.Tenant}
	out := settle.TaskMsg(e.Endpoint, &ev, settle.State{}, m.Msg.Data(), m.Msg.Headers(), time.Time{})
	settle.MarkIncarnation(out.Header, cur.set.Load().ep.CreatedAt) // the drain drops it if the endpoint is deleted meanwhile
	inLane := laneReplay(out, cur, m.Msg.Headers())
	// tracing: a replay span, child of the dead letter's traceparent; the replay carries its own.
	span := d.o.Tracer.StartReplay(ctx, tracing.Header(m.Msg.Headers()), tracing.Replay{Endpoint: e.Endpoint, EventType: e.EventType, EventID: e.EventID, Seq: e.Seq})
	span.Inject(tracing.Header(out.Header))
	err := d.settle.Publish(out)
	span.End(err) // tracing
	if err != nil {
		return true, err // the replay names the dead letter
	}
	d.o.Metrics.Published.Inc()
	if !inLane {
		d.drains.Note(e.Endpoint, time.Time{})
	}
	return true, nil
}

// SetGauges sets the gauges read from JetStream, each endpoint's pending
// count under its series label.
func (q querySource) SetGauges(g query.Gauges) {
	d, m := q.d, q.d.o.Metrics
	m.OldestPending.Set(g.OldestPendingSeconds)
	m.DLQMessages.Set(float64(g.DeadLetters))
	if g.Pending != nil {
		// Every labelled endpoint has a series, 0 when nothing waits.
		m.Pending.Reset()
		d.series.Owned(func(l string) { m.Pending.WithLabelValues(l).Set(0) })
		other := 0.0
		for id, n := range g.Pending {
			if d.endpoint(id) == nil {
				continue
			}
			if l := d.series.Label(id); l == settle.OtherSeries {
				other += float64(n)
			} else {
				m.Pending.WithLabelValues(l).Set(float64(n))
			}
		}
		if other > 0 {
			m.Pending.WithLabelValues(settle.OtherSeries).Set(other)
		}
	}
	m.Endpoints.WithLabelValues("enabled").Set(float64(g.Enabled))
	m.Endpoints.WithLabelValues("disabled").Set(float64(g.Disabled))
	m.Endpoints.WithLabelValues("breaker_open").Set(float64(g.BreakerOpen))
}

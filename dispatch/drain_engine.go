package dispatch

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch/drain"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/jetstream"
)

// The engine's side of the drains (package drain): drainEngine is its
// drain.Engine, drainEndpoint one endpoint as a drain sees it. A drain
// admits deliveries through the endpoint, fetches that many tasks and
// offers each to the engine, which delivers it as any other delivery and
// settles it through the drain (ack or nak).

// drainEngine is the dispatcher as the drains see it.
type drainEngine struct{ d *Dispatcher }

var _ drain.Engine = drainEngine{}

func (x drainEngine) Endpoint(id string) drain.Endpoint {
	e := x.d.endpoint(id)
	if e == nil {
		return nil
	}
	return &drainEndpoint{d: x.d, e: e, s: e.set.Load()}
}

func (x drainEngine) LongestWait() time.Duration {
	d := x.d
	var longest time.Duration
	d.mu.RLock()
	for _, e := range d.eps {
		ep := e.set.Load().ep
		longest = max(longest, ep.Retry.Cap, ep.Timeout)
	}
	d.mu.RUnlock()
	return longest
}

// drainEndpoint is endpoint e with settings s.
type drainEndpoint struct {
	d *Dispatcher
	e *endpoint
	s *settings
}

func (x *drainEndpoint) Config() *config.Endpoint { return x.s.ep }

func (x *drainEndpoint) Current() drain.Endpoint {
	return &drainEndpoint{d: x.d, e: x.e, s: x.d.current(x.e)}
}

func (x *drainEndpoint) Gate(now time.Time) (disabled bool, notBefore time.Time) {
	d, id := x.d, x.e.ID
	if cause, until := d.states.Blocked(id, now); cause == "disabled" {
		disabled = true
	} else if cause != "" {
		return false, until
	}
	if h, ok := d.o.Breakers.Health(id); ok && h.State == breaker.Open && h.OpenUntil.After(now) {
		return disabled, h.OpenUntil
	}
	return disabled, time.Time{}
}

func (x *drainEndpoint) AdmitNow(ctx context.Context, poll time.Duration) (drain.Admission, time.Time) {
	adm, wait := x.admitNow(ctx, poll)
	if adm == nil {
		return nil, wait
	}
	return adm, wait
}

func (x *drainEndpoint) Admit() drain.Admission {
	adm, _ := x.d.gate.admit(x.e, x.s)
	if adm == nil {
		return nil
	}
	return adm
}

// Offer delivers one task of the endpoint: discarded when it is no longer
// the endpoint's, settled at once when the ledger says the endpoint has
// it, stored afresh when JetStream is about to give up on it, otherwise
// launched (waiting for a worker) like any delivery.
func (x *drainEndpoint) Offer(ctx context.Context, msg natsjs.Msg, meta *natsjs.MsgMetadata, a drain.Admission, finish func(ok bool)) {
	d, e := x.d, x.e
	adm := a.(*admission)
	ev, st := settle.TaskOf(msg.Headers(), meta.Timestamp)
	dl := newDelivery(e, d.current(e), &ev, st, msg.Data(), msg.Headers()) // the settings in force now, not when a waiting fetch began
	dl.Done = func(ok bool) {
		if ok {
			e.Consumed(settle.TaskSize(len(msg.Data())), msg.Headers().Get(settle.HdrBusy) != "")
		}
		finish(ok)
	}
	if settle.NotForEndpoint(msg.Headers(), &ev, x.s.ep) {
		adm.Release()
		dl.Log(d.log, slog.LevelInfo, "task discarded: stored for another endpoint with this id (deleted since), or an event of another tenant", "task_endpoint_created", msg.Headers().Get(jetstream.HdrIncarnation))
		dl.Done(true)
		return
	}
	// A redelivery asked for through the API goes again although the
	// ledger knows the endpoint had the event: that is its point.
	if !strings.HasPrefix(ev.Key, settle.RedeliverKey) && d.fan.alreadyDelivered(dl) {
		adm.Release()
		return
	}
	if meta.NumDelivered >= uint64(jetstream.TasksMaxDeliver-1) {
		// The server is about to give up on the task after as many
		// deliveries: NATS failures and shutdowns, which are not attempts
		// (those travel in its headers). Store it afresh.
		adm.Release()
		d.goJob(func() { x.requeue(dl) })
		return
	}
	size := int64(len(msg.Data()))
	if !d.fan.unsettledBytes.Acquire(ctx, size) {
		adm.Release()
		dl.Done(false)
		return
	}
	done := dl.Done
	dl.Done = func(ok bool) {
		d.fan.unsettledBytes.Release(size)
		done(ok)
	}
	d.gate.launch(ctx, dl, adm, true)
}

// Expire dead-letters a disabled endpoint's task past retry.max_age.
func (x *drainEndpoint) Expire(raw *natsjs.RawStreamMsg) (fresh, ok bool) {
	d := x.d
	ev, ast := settle.TaskOf(raw.Header, raw.Time)
	reason, why, fresh := settle.Precheck(0, 0, x.s.ep.Settings, ev.At, d.now())
	if fresh {
		return true, false
	}
	if ast.Error == "" {
		ast.Error = why + " while the endpoint was disabled"
	}
	dl := newDelivery(x.e, x.s, &ev, ast, raw.Data, raw.Header)
	dl.Done = func(v bool) { ok = v }
	d.settle.deadLetter(dl, reason)
	return false, ok
}

func (x *drainEndpoint) Consumed(raw *natsjs.RawStreamMsg) {
	x.e.Consumed(settle.TaskSize(len(raw.Data)), raw.Header.Get(settle.HdrBusy) != "")
}

// Found raises the endpoint's backlog to the server's count of its tasks:
// those stored before a restart or by another process count toward
// max_backlog too; the busy ones this process knows of do not.
func (x *drainEndpoint) Found(n uint64) { x.e.Found(n) }

// admitNow admits a delivery to the endpoint: an in-flight slot (within
// its share of the workers), a rate-limit token and the breaker's
// permission. It waits only for a slot, at most poll: the endpoint's own
// deliveries free them as they finish. When the endpoint cannot take one it
// returns nil and when to look again: a drain never sleeps on a rate limit
// or a breaker while it holds one of the process's drains.
func (x *drainEndpoint) admitNow(ctx context.Context, poll time.Duration) (*admission, time.Time) {
	d, e, s := x.d, x.e, x.s
	now := d.now()
	if cause, until := d.states.Blocked(e.ID, now); cause != "" {
		return nil, until
	}
	if !e.slots.tryAcquire() {
		d.countDeferral(e, "in_flight")
		if !e.slots.acquireFirst(ctx, poll) {
			return nil, d.now()
		}
	}
	var token *rate.Reservation
	if s.limiter != nil {
		token = s.limiter.Reserve()
		if wait := token.Delay(); wait > 0 {
			token.Cancel()
			e.slots.release()
			d.countDeferral(e, "rate_limit")
			return nil, now.Add(wait)
		}
	}
	adm, wait := d.gate.admitBreaker(e, token)
	if adm != nil {
		return adm, time.Time{}
	}
	d.countDeferral(e, "breaker")
	return nil, now.Add(max(wait, poll))
}

// requeue stores dl's task again as a new message, with the same attempt
// state, and settles the old one.
func (x *drainEndpoint) requeue(dl *delivery) {
	d := x.d
	msg := dl.Task(time.Time{})
	msg.Header.Set(jetstream.HdrMsgID, msg.Header.Get(jetstream.HdrMsgID)+"-q"+strconv.FormatInt(d.now().UnixNano(), 36))
	busy := dl.Header.Get(settle.HdrBusy)
	if busy != "" {
		msg.Header.Set(settle.HdrBusy, busy)
	}
	if err := d.settle.Publish(msg); err != nil {
		dl.Log(d.log, slog.LevelWarn, "task not stored again; it comes back", "err", err)
		dl.Done(false)
		return
	}
	dl.e.Requeued(settle.TaskSize(len(dl.Data)), busy != "") // the copy; settling the old one counts it consumed
	dl.Done(true)
}

// Leftover is what waited in JetStream when the dispatcher started: after
// an unclean stop, what the previous process left.
type Leftover struct {
	// Tasks are the messages of HOOKJET_TASKS: parked deliveries and
	// scheduled retries.
	Tasks uint64
	// Taken of them, for TakenEndpoints endpoints, had been handed to a
	// process that had not settled them; NATS gives them back within
	// TakenFor.
	Taken, TakenEndpoints int
	TakenFor              time.Duration
	// Events the fan-out had handed out and not had settled; NATS gives
	// them back within EventsFor.
	Events    int
	EventsFor time.Duration
}

// noteLeftover records what waits at start (see Leftover).
func (d *Dispatcher) noteLeftover(ctx context.Context) {
	lo := &d.leftover
	lo.Taken, lo.TakenEndpoints, lo.TakenFor = d.drains.NoteTaken(ctx)
	if ci := d.fan.cons.CachedInfo(); ci != nil {
		lo.Events, lo.EventsFor = ci.NumAckPending, ci.Config.AckWait
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if st, err := d.o.JS.Stream(sctx, jetstream.TasksStream); err == nil {
		lo.Tasks = st.CachedInfo().State.Msgs
	}
}

// LeftAtStart is what waited in JetStream when the dispatcher started.
func (d *Dispatcher) LeftAtStart() Leftover { return d.leftover }

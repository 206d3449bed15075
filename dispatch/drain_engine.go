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
	d, id := x.d, x.e.id
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

// drainAdmission is an admission as a drain holds it.
type drainAdmission struct{ a *admission }

func (a drainAdmission) Release() { a.a.release() }

func (x *drainEndpoint) AdmitNow(ctx context.Context, poll time.Duration) (drain.Admission, time.Time) {
	adm, wait := x.admitNow(ctx, poll)
	if adm == nil {
		return nil, wait
	}
	return drainAdmission{adm}, wait
}

func (x *drainEndpoint) Admit() drain.Admission {
	adm, _ := x.d.gate.admit(x.e, x.s)
	if adm == nil {
		return nil
	}
	return drainAdmission{adm}
}

// Offer delivers one task of the endpoint: discarded when it is no longer
// the endpoint's, settled at once when the ledger says the endpoint has
// it, stored afresh when JetStream is about to give up on it, otherwise
// launched (waiting for a worker) like any delivery.
func (x *drainEndpoint) Offer(ctx context.Context, msg natsjs.Msg, meta *natsjs.MsgMetadata, a drain.Admission, settle func(ok bool)) {
	d, e := x.d, x.e
	adm := a.(drainAdmission).a
	ev, st := taskOf(msg.Headers(), meta.Timestamp)
	dl := &delivery{e: e, s: d.current(e), ev: &ev, st: st, data: msg.Data(), hdr: msg.Headers()} // the settings in force now, not when a waiting fetch began
	dl.done = func(ok bool) {
		if ok {
			e.consumed(taskSize(len(msg.Data())), msg.Headers().Get(hdrBusy) != "")
		}
		settle(ok)
	}
	if notForEndpoint(msg.Headers(), &ev, x.s.ep) {
		adm.release()
		dl.log(d.log, slog.LevelInfo, "task discarded: stored for another endpoint with this id (deleted since), or an event of another tenant", "task_endpoint_created", msg.Headers().Get(hdrIncarnation))
		dl.done(true)
		return
	}
	// A redelivery asked for through the API goes again although the
	// ledger knows the endpoint had the event: that is its point.
	if !strings.HasPrefix(ev.key, redeliverKey) && d.fan.alreadyDelivered(dl) {
		adm.release()
		return
	}
	if meta.NumDelivered >= uint64(jetstream.TasksMaxDeliver-1) {
		// The server is about to give up on the task after as many
		// deliveries: NATS failures and shutdowns, which are not attempts
		// (those travel in its headers). Store it afresh.
		adm.release()
		d.goJob(func() { x.requeue(dl) })
		return
	}
	size := int64(len(msg.Data()))
	if !d.fan.unsettledBytes.Acquire(ctx, size) {
		adm.release()
		dl.done(false)
		return
	}
	done := dl.done
	dl.done = func(ok bool) {
		d.fan.unsettledBytes.Release(size)
		done(ok)
	}
	d.gate.launch(ctx, dl, adm, true)
}

// Expire dead-letters a disabled endpoint's task past retry.max_age.
func (x *drainEndpoint) Expire(raw *natsjs.RawStreamMsg) (fresh, ok bool) {
	d := x.d
	ev, ast := taskOf(raw.Header, raw.Time)
	reason, why, fresh := precheck(0, 0, x.s.ep.Settings, ev.at, d.now())
	if fresh {
		return true, false
	}
	if ast.Error == "" {
		ast.Error = why + " while the endpoint was disabled"
	}
	d.settle.deadLetter(&delivery{e: x.e, s: x.s, ev: &ev, st: ast, data: raw.Data, hdr: raw.Header, done: func(v bool) { ok = v }}, reason)
	return false, ok
}

func (x *drainEndpoint) Consumed(raw *natsjs.RawStreamMsg) {
	x.e.consumed(taskSize(len(raw.Data)), raw.Header.Get(hdrBusy) != "")
}

// Found raises the endpoint's backlog to the server's count of its tasks:
// those stored before a restart or by another process count toward
// max_backlog too; the busy ones this process knows of do not.
func (x *drainEndpoint) Found(n uint64) {
	e := x.e
	if cur, n := e.backlog.Load(), int64(n)-e.busy.Load(); n > cur {
		e.backlog.CompareAndSwap(cur, n)
	}
}

// admitNow admits a delivery to the endpoint: an in-flight slot (within
// its share of the workers), a rate-limit token and the breaker's
// permission. It waits only for a slot, at most poll: the endpoint's own
// deliveries free them as they finish. When the endpoint cannot take one it
// returns nil and when to look again: a drain never sleeps on a rate limit
// or a breaker while it holds one of the process's drains.
func (x *drainEndpoint) admitNow(ctx context.Context, poll time.Duration) (*admission, time.Time) {
	d, e, s := x.d, x.e, x.s
	now := d.now()
	if cause, until := d.states.Blocked(e.id, now); cause != "" {
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
	msg := taskFor(dl, time.Time{})
	msg.Header.Set(jetstream.HdrMsgID, msg.Header.Get(jetstream.HdrMsgID)+"-q"+strconv.FormatInt(d.now().UnixNano(), 36))
	busy := dl.hdr.Get(hdrBusy)
	if busy != "" {
		msg.Header.Set(hdrBusy, busy)
	}
	if err := d.settle.publish(msg); err != nil {
		dl.log(d.log, slog.LevelWarn, "task not stored again; it comes back", "err", err)
		dl.done(false)
		return
	}
	// The copy; settling the old one counts it consumed.
	if busy != "" {
		dl.e.busy.Add(1)
	} else {
		dl.e.backlog.Add(1)
		dl.e.backlogBytes.Add(taskSize(len(dl.data)))
	}
	dl.done(true)
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

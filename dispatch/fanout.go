package dispatch

import (
	"context"
	"errors"
	"github.com/hookjet/hookjet/jetstream"
	"strconv"
	"sync/atomic"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

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

// fanoutBytes bounds what the fan-out buffers in the client, and
// unsettledBytes the payloads of events being delivered, process-wide: with
// 1 MB events and slow endpoints, memory stays near 32 + 128 MB whatever
// the number of endpoints. fanoutBytes stays under the subscription's
// pending limit (64 MB), so a full buffer never drops a message.
const (
	fanoutBytes    = 32 << 20
	unsettledBytes = 128 << 20
)

// runFanout pulls HOOKJET_EVENTS through the shared consumer and fans each
// event out. A consumer that disappears (deleted by an operator) is created
// again, and the loss is logged.
//
// It uses Consume, whose subscription queues what the server sends while
// every unsettled slot is taken: with Messages, a channel exactly as large as
// the pull batch fills up with events and the server's status messages
// (heartbeats, request timeouts) are dropped as a slow consumer.
func (d *Dispatcher) runFanout(ctx context.Context, cons natsjs.Consumer) {
	batch := cap(d.unsettled)
	for ctx.Err() == nil {
		gone := make(chan error, 1)
		cc, err := cons.Consume(func(msg natsjs.Msg) {
			select {
			case d.unsettled <- struct{}{}:
			case <-ctx.Done():
			}
			if ctx.Err() != nil {
				// Stopping: hand buffered events straight back to
				// JetStream instead of letting them wait out AckWait.
				if err := msg.Nak(); err != nil {
					d.log.Debug("nak buffered event", "err", err)
				}
				return
			}
			d.fanOut(ctx, msg)
		}, natsjs.PullMaxMessagesWithBytesLimit(batch, fanoutBytes), natsjs.ConsumeErrHandler(func(_ natsjs.ConsumeContext, err error) {
			if errors.Is(err, natsjs.ErrConsumerDeleted) || errors.Is(err, natsjs.ErrConsumerNotFound) {
				select {
				case gone <- err:
				default:
				}
				return
			}
			d.log.Debug("consume events", "err", err)
		}))
		if err == nil {
			select {
			case <-ctx.Done():
			case err = <-gone:
			}
			d.stopConsume(cc)
		}
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("consume events", "err", err)
		sleep(ctx, time.Second)
		if errors.Is(err, natsjs.ErrConsumerNotFound) || errors.Is(err, natsjs.ErrConsumerDeleted) {
			// Start after the last event this process saw, not at the start
			// of the log: that would resend every event older than the
			// ledger's TTL.
			from := d.fanoutSeen.Load() + 1
			if c, err := jetstream.EnsureFanoutConsumerFrom(ctx, d.o.JS, d.fanoutAckWait, from); err == nil {
				d.log.Warn("the fan-out consumer was missing; created it again", "consumer", jetstream.FanoutConsumer, "from_seq", from)
				cons = c
			}
		}
	}
}

// stopConsume drains cc, which hands what it had buffered to the handler
// (which naks it once the fan-out is stopping), and waits up to 5 s for it.
func (d *Dispatcher) stopConsume(cc natsjs.ConsumeContext) {
	cc.Drain()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-cc.Closed():
	case <-t.C:
		cc.Stop()
		d.log.Debug("fan-out drain timed out")
	}
}

// fanEvent settles one event of the fan-out: it is acked once every delivery
// is settled, or put back when one of them could not be (a NATS failure):
// deliveries already made are then recognised by the ledger, and tasks
// already stored by their Nats-Msg-Id.
type fanEvent struct {
	d      *Dispatcher
	msg    natsjs.Msg
	size   int64 // bytes taken from the dispatcher's byte budget
	left   atomic.Int32
	failed atomic.Bool
}

func (f *fanEvent) settle(ok bool) {
	if !ok {
		f.failed.Store(true)
	}
	if f.left.Add(-1) != 0 {
		return
	}
	if f.failed.Load() {
		if err := f.msg.NakWithDelay(2*time.Second + jitter(3*time.Second)); err != nil {
			f.d.log.Warn("nak event", "err", err)
		}
	} else if err := f.msg.Ack(); err != nil {
		f.d.log.Warn("ack event", "err", err)
	}
	f.d.unsettledBytes.release(f.size)
	<-f.d.unsettled
}

func (d *Dispatcher) eventOf(msg natsjs.Msg, meta *natsjs.MsgMetadata) event {
	ev := event{seq: meta.Sequence.Stream, at: meta.Timestamp}
	ev.key = strconv.FormatUint(ev.seq, 10)
	subj := msg.Subject()
	ev.typ = subj[min(len(jetstream.EventsPrefix), len(subj)):]
	ev.id = msg.Headers().Get(jetstream.HdrMsgID)
	if ev.id == "" {
		ev.id = "seq_" + ev.key
		if meta.NumDelivered == 1 {
			d.o.Metrics.MissingID.Inc() // once per event, not per endpoint
		}
	}
	return ev
}

// fanOut delivers one event to every endpoint whose patterns match it.
func (d *Dispatcher) fanOut(ctx context.Context, msg natsjs.Msg) {
	meta, err := msg.Metadata()
	if err != nil {
		d.log.Error("event without metadata", "err", err)
		<-d.unsettled
		return
	}
	if seq := meta.Sequence.Stream; seq > d.fanoutSeen.Load() {
		d.fanoutSeen.Store(seq) // one goroutine runs fanOut
	}
	ev := d.eventOf(msg, meta)
	if d.duplicate(&ev) {
		d.o.Metrics.Duplicates.WithLabelValues("ledger").Inc()
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack duplicate event", "err", err)
		}
		<-d.unsettled
		return
	}
	var buf [8]string
	targets := d.idx.match(ev.typ, buf[:0])
	if len(targets) == 0 {
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack event", "err", err)
		}
		<-d.unsettled
		return
	}
	f := &fanEvent{d: d, msg: msg, size: int64(len(msg.Data()))}
	if !d.unsettledBytes.acquire(ctx, f.size) {
		if err := msg.Nak(); err != nil {
			d.log.Debug("nak event at shutdown", "err", err)
		}
		<-d.unsettled
		return
	}
	f.left.Store(int32(len(targets)))
	exhausted := meta.NumDelivered >= uint64(jetstream.EventsMaxDeliver-1)
	for _, id := range targets {
		e := d.endpoint(id)
		if e == nil {
			f.settle(true) // removed meanwhile
			continue
		}
		dl := &delivery{e: e, s: d.current(e), ev: &ev, data: msg.Data(), hdr: msg.Headers(), done: f.settle}
		if d.alreadyDelivered(dl) {
			continue
		}
		if exhausted {
			// The safety net, before the server gives up on the event.
			dl.st.Error = "JetStream MaxDeliver of the fan-out consumer reached"
			d.goDeadLetter(dl, "exhausted")
			continue
		}
		d.route(ctx, dl)
	}
}

// duplicate reports whether ev's id was already accepted as another message.
func (d *Dispatcher) duplicate(ev *event) bool {
	_, dup, err := d.o.Ledger.FirstSeen(ev.id, ev.seq)
	if err != nil {
		d.log.Warn("ledger lookup", "event_id", ev.id, "err", err)
		return false
	}
	if !dup && d.shared != nil {
		// Another process may have accepted this id: ask the shared record.
		// If it cannot answer, deliver: a possible duplicate beats a stall.
		if dup, err = d.shared.duplicate(d.sendCtx, ev.id, ev.seq); err != nil {
			d.log.Warn("shared dedupe lookup failed; delivering", "event_id", ev.id, "err", err)
		}
	}
	return dup
}

// alreadyDelivered settles dl at once when the ledger says its endpoint has
// it. It is checked on every delivery, not only redeliveries: a server that
// lost consumer state in a crash redelivers with a count of 1.
func (d *Dispatcher) alreadyDelivered(dl *delivery) bool {
	done, err := d.o.Ledger.Delivered(dl.e.id, dl.ev.id)
	if err != nil || !done {
		return false
	}
	d.o.Metrics.Duplicates.WithLabelValues("delivered").Inc()
	dl.done(true)
	return true
}

// route sends dl now if its endpoint can take it, waits briefly for an
// in-flight slot, or parks it as a task.
func (d *Dispatcher) route(ctx context.Context, dl *delivery) {
	if 2*dl.s.ep.Timeout+15*time.Second > d.fanoutAckWait {
		d.park(dl, "slow")
		return
	}
	adm, cause := d.admit(dl.e, dl.s)
	switch cause {
	case "":
		d.launch(ctx, dl, adm)
	case "in_flight":
		d.inflight.Add(1)
		go func() {
			defer d.inflight.Done()
			if !dl.e.slots.acquire(ctx, inFlightWait) {
				d.park(dl, "in_flight")
				return
			}
			adm, cause := d.admitHolding(dl.e, dl.s)
			if cause != "" {
				d.park(dl, cause)
				return
			}
			d.launch(ctx, dl, adm)
		}()
	default:
		d.park(dl, cause)
	}
}

// admission is what a delivery holds once admitted: a slot of its
// endpoint's in-flight cap and its breaker's permission. release gives both
// back when no attempt is made; after an attempt the breaker is settled by
// its Record and only the slot is released.
type admission struct {
	d       *Dispatcher
	e       *endpoint
	breaker bool
}

func (a *admission) release() {
	if a.breaker {
		a.d.o.Breakers.Release(a.e.id)
		a.breaker = false
	}
	a.e.slots.release()
}

// admit asks, without waiting, whether e can take a delivery now. It returns
// the admission, or the cause that keeps e from taking it: disabled,
// rate_limit (a receiver's Retry-After or the local limit), breaker or
// in_flight.
func (d *Dispatcher) admit(e *endpoint, s *settings) (*admission, string) {
	if cause, _ := d.blocked(e.id, d.now()); cause != "" {
		return nil, cause
	}
	if !e.slots.tryAcquire() {
		return nil, "in_flight"
	}
	return d.admitHolding(e, s)
}

// admitHolding is admit for a caller that already holds one of e's slots;
// the slot is given back when e cannot take the delivery.
func (d *Dispatcher) admitHolding(e *endpoint, s *settings) (*admission, string) {
	if cause, _ := d.blocked(e.id, d.now()); cause != "" {
		e.slots.release()
		return nil, cause
	}
	if s.limiter != nil {
		r := s.limiter.Reserve()
		if r.Delay() > 0 {
			r.Cancel()
			e.slots.release()
			return nil, "rate_limit"
		}
	}
	if ok, _ := d.o.Breakers.Acquire(e.id); !ok {
		e.slots.release()
		return nil, "breaker"
	}
	return &admission{d: d, e: e, breaker: true}, ""
}

// launch takes a slot of the global concurrency and attempts dl on a worker
// goroutine.
func (d *Dispatcher) launch(ctx context.Context, dl *delivery, adm *admission) {
	select {
	case d.global <- struct{}{}:
	case <-ctx.Done():
		adm.release()
		dl.done(false)
		return
	}
	m := d.o.Metrics
	d.inflight.Add(1)
	m.InFlight.Set(float64(d.inFlightN.Add(1)))
	go func() {
		defer d.inflight.Done()
		d.attempt(dl, adm)
		<-d.global
		m.InFlight.Set(float64(d.inFlightN.Add(-1)))
	}()
}

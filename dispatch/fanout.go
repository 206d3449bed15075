package dispatch

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
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

// fanoutBytes bounds what the fan-out's pulls bring into the client and the
// events it holds ahead (see fanoutAhead), and unsettledBytes the payloads
// of events being delivered, process-wide: with
// 1 MB events and slow endpoints, memory stays near 32 + 128 MB whatever
// the number of endpoints. fanoutBytes stays under the subscription's
// pending limit (64 MB), so a pull never drops a message, and twice over
// the largest event config allows (security.max_payload_bytes, at most
// 16 MiB): a pull whose byte limit an event exceeds would never deliver it.
const (
	fanoutBytes    = 32 << 20
	unsettledBytes = 128 << 20
)

// runFanout pulls HOOKJET_EVENTS through the shared consumer and fans each
// event out. A consumer that disappears (deleted by an operator) is created
// again, and the loss is logged.
//
// It pulls with Fetch, a request for every fanoutChunk events it has room
// ahead for (see fanoutAhead): while events wait in the log and room is
// free, pulls are at the server for all of it, and nothing is buffered in
// the client that the room does not hold. (Consume re-pulls from its own count of the events
// it asked for and not yet handed over, which a blocking handler lets drift
// above what the server still holds: the fan-out then sat idle with every
// event settled and no pull at the server until the missing heartbeat, 30 s
// later, made Consume pull again.)
func (d *Dispatcher) runFanout(ctx context.Context, cons natsjs.Consumer) {
	for ctx.Err() == nil {
		err := d.consumeFanout(ctx, cons)
		if ctx.Err() != nil {
			return
		}
		d.log.Warn("consume events", "err", err)
		sleep(ctx, time.Second)
		if !errors.Is(err, natsjs.ErrConsumerNotFound) && !errors.Is(err, natsjs.ErrConsumerDeleted) {
			continue
		}
		// Start after the ack floor last seen, not at the start of the log,
		// which would resend every event older than the ledger's TTL; the
		// ledger absorbs what this process sees again. Retried until
		// JetStream answers.
		from := d.fanoutFloor.Load() + 1
		for ctx.Err() == nil {
			c, err := jetstream.EnsureFanoutConsumerFrom(ctx, d.o.JS, d.fanoutAckWait, from)
			if err == nil {
				d.log.Warn("the fan-out consumer was missing; created it again", "consumer", jetstream.FanoutConsumer, "from_seq", from)
				cons = c
				break
			}
			d.log.Warn("create the fan-out consumer again", "err", err)
			sleep(ctx, 2*time.Second)
		}
	}
}

// fanoutWait is how long one fan-out pull waits at the server for events:
// an idle process asks once per fanoutWait for each pull it keeps open. A
// stopping process listens at most fanoutStopWait for its open pulls' last
// events, which it hands back.
const (
	fanoutWait     = 5 * time.Second
	fanoutStopWait = time.Second
)

// fanoutAhead bounds the events the fan-out holds pulled ahead of its
// unsettled slots, asked for in pulls of fanoutChunk, several at a time.
// Within it the fan-out holds about aheadHorizon of what its workers took
// per second lately, at least 2 x fanoutChunk.
//
// A standalone nats-server delivers a pull's events on the same goroutine
// that stores the stream's incoming messages (one fsync each with
// nats.sync always): while a burst of publishes is being stored, every pull
// waits for all of them, seconds for thousands, and then gets at most what
// it asked for. One pull at a time asked for what was free when it went
// out, a few events, and the fan-out then sat idle for the next round of
// stores. Pulls that go out as room frees, and the events held ahead, keep
// the deliveries going meanwhile. What is held ahead is bounded in time so
// that it is taken well within AckWait (at least 30 s) even after such a
// wait; an event held for half of AckWait (the process paused) is handed
// back instead of delivered.
const (
	fanoutAhead  = 8192
	fanoutChunk  = 1024
	aheadHorizon = 10 * time.Second
	aheadTick    = 500 * time.Millisecond
)

// pulledEvent is an event held ahead, when it was read (at), and when the
// pull that brought it was sent (sent: its AckWait runs from no earlier;
// see late).
type pulledEvent struct {
	msg      natsjs.Msg
	at, sent time.Time
}

// aheadQueue is the events the fan-out holds pulled ahead of its unsettled
// slots. held counts the events queued or asked for: a pull takes room for
// what it asks, a worker gives one back as it takes an event. bytes bounds
// the payloads queued and the byte limits of the pulls out at fanoutBytes
// (one pull may always go out).
type aheadQueue struct {
	queue chan pulledEvent
	bytes *byteBudget
	// pullBytes is each pull's byte limit: fanoutBytes / 16, or more for
	// large events; fanoutBytes once a pull came back empty at once (an
	// event over its limit).
	pullBytes atomic.Int64
	taken     atomic.Int64 // events the workers took, ever

	mu    sync.Mutex
	held  int
	limit int
	rate  float64       // events taken per second, the recent peak
	freed chan struct{} // closed and replaced when held drops; nil until a pull waits
}

func newAheadQueue(maxMsg int64) *aheadQueue {
	// The queue holds what the room allows, and events of pulls given up.
	a := &aheadQueue{queue: make(chan pulledEvent, 2*fanoutAhead), bytes: newByteBudget(fanoutBytes), limit: 2 * fanoutChunk}
	a.pullBytes.Store(min(fanoutBytes, max(fanoutBytes/16, 2*maxMsg)))
	return a
}

// take takes room for n more events, waiting until they fit under the
// limit (or nothing is held); false when ctx is done, or with the error
// that arrived on failed meanwhile.
func (a *aheadQueue) take(ctx context.Context, n int, failed <-chan error) (bool, error) {
	for {
		a.mu.Lock()
		if a.held == 0 || a.held+n <= a.limit {
			a.held += n
			a.mu.Unlock()
			return true, nil
		}
		if a.freed == nil {
			a.freed = make(chan struct{})
		}
		ch := a.freed
		a.mu.Unlock()
		select {
		case <-ch:
		case err := <-failed:
			return false, err
		case <-ctx.Done():
			return false, nil
		}
	}
}

// force counts an event of size bytes that arrived for a pull already
// given up: it holds room and bytes beyond the limits until taken.
func (a *aheadQueue) force(size int64) {
	a.mu.Lock()
	a.held++
	a.mu.Unlock()
	a.bytes.mu.Lock()
	a.bytes.used += size
	a.bytes.mu.Unlock()
}

// give gives back room for n events.
func (a *aheadQueue) give(n int) {
	a.mu.Lock()
	a.held -= n
	if a.freed != nil {
		close(a.freed)
		a.freed = nil
	}
	a.mu.Unlock()
}

func (a *aheadQueue) took(p pulledEvent) {
	a.bytes.release(int64(len(p.msg.Data())))
	a.taken.Add(1)
	a.give(1)
}

// pace sets the limit to aheadHorizon of the recent peak of events taken
// per second, every aheadTick until ctx is done. The peak decays slowly, so
// a wait for the server does not shrink what is asked for next.
func (a *aheadQueue) pace(ctx context.Context) {
	t := time.NewTicker(aheadTick)
	defer t.Stop()
	last := a.taken.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := a.taken.Load()
		a.mu.Lock()
		a.rate = max(float64(n-last)/aheadTick.Seconds(), 0.95*a.rate)
		a.limit = min(fanoutAhead, max(2*fanoutChunk, int(a.rate*aheadHorizon.Seconds())))
		if a.freed != nil {
			close(a.freed)
			a.freed = nil
		}
		a.mu.Unlock()
		last = n
	}
}

// consumeFanout pulls cons until ctx is done or the consumer is gone, and
// returns why it stopped.
func (d *Dispatcher) consumeFanout(ctx context.Context, cons natsjs.Consumer) error {
	var workers, recv sync.WaitGroup
	// The pulls only fill the events held ahead; the fan-out workers take
	// each with an unsettled slot: a slow NATS call of one event (a task's
	// publish over the network) delays one worker, not the pulls.
	ahead := newAheadQueue(int64(jetstream.MaxMsgSize(d.cfg)))
	info := cons.CachedInfo()
	p := newFanoutPuller(d.fanoutConn(), info.Stream, info.Name, ahead)
	workers.Add(d.fanoutWorkers())
	for range d.fanoutWorkers() {
		go func() {
			defer workers.Done()
			for ev := range ahead.queue {
				ahead.took(ev)
				d.takeOn(ctx, ev)
			}
		}()
	}
	paceCtx, stopPace := context.WithCancel(ctx)
	workers.Go(func() { ahead.pace(paceCtx) })
	listen, stopListening := listenPast(ctx, fanoutStopWait)
	failed := make(chan error, 4)
	recv.Go(func() {
		if err := p.receive(ctx, listen, failed, d.log.Debug); err != nil {
			report(failed, err)
		}
	})
	defer func() {
		stopPace()
		if ctx.Err() == nil {
			p.endAll() // the consumer is gone: nothing more comes
		}
		for p.openCount() > 0 && listen.Err() == nil {
			sleep(listen, 10*time.Millisecond) // the open pulls' last events
		}
		stopListening()
		recv.Wait()
		p.handBack(d.log.Debug)
		close(ahead.queue)
		workers.Wait()
	}()
	for {
		err := d.nextPull(ctx, p, failed)
		if err == nil {
			return ctx.Err()
		}
		if errors.Is(err, natsjs.ErrConsumerDeleted) || errors.Is(err, natsjs.ErrConsumerNotFound) {
			return err
		}
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, errPullUnanswered) {
			// A consumer deleted while no pull was waiting sends no
			// "consumer deleted"; its pulls go unanswered. Ask.
			ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, ierr := cons.Info(ictx)
			cancel()
			if errors.Is(ierr, natsjs.ErrConsumerNotFound) {
				return ierr
			}
		}
		d.log.Debug("consume events", "err", err)
		sleep(ctx, 100*time.Millisecond) // NATS reconnecting, or a leader change
	}
}

// listenPast returns a context that ends grace after ctx does, and a
// function that ends it at once; call it when done with the context.
func listenPast(ctx context.Context, grace time.Duration) (context.Context, func()) {
	listen, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-done:
		}
		cancel()
	})
	return listen, func() {
		stop()
		close(done)
		cancel()
	}
}

// nextPull sends pulls of fanoutChunk events as room for them frees, until
// ctx is done (nil) or a pull fails (its error).
func (d *Dispatcher) nextPull(ctx context.Context, p *fanoutPuller, failed <-chan error) error {
	ahead := p.ahead
	for {
		select {
		case err := <-failed:
			return err
		default:
		}
		if ok, err := ahead.take(ctx, fanoutChunk, failed); !ok {
			return err
		}
		limit := ahead.pullBytes.Load()
		if !ahead.bytes.acquire(ctx, limit) {
			ahead.give(fanoutChunk)
			return nil
		}
		if err := p.request(fanoutChunk, limit); err != nil {
			ahead.give(fanoutChunk)
			ahead.bytes.release(limit)
			return err
		}
	}
}

// takeOn gives an event held ahead an unsettled slot and fans it out, or
// hands it back to JetStream: at shutdown, and when it was held for half of
// AckWait (the process was paused, and JetStream may have handed it to
// another process).
func (d *Dispatcher) takeOn(ctx context.Context, p pulledEvent) {
	if time.Since(p.at) < d.fanoutAckWait/2 {
		select {
		case d.unsettled <- struct{}{}:
			d.fanOut(ctx, p)
			return
		case <-ctx.Done():
		}
	}
	if err := p.msg.Nak(); err != nil {
		d.log.Debug("hand back pulled event", "err", err)
	}
}

// fanoutWorkers is how many events this process fans out at once: more with
// nats.url, where the NATS calls of a fan-out (tasks parked) are network
// round trips.
func (d *Dispatcher) fanoutWorkers() int {
	if d.shared != nil {
		// One per unsettled event: with R3 under load a task's publish
		// takes tens of milliseconds, and the rate is workers / round trip.
		return cap(d.unsettled)
	}
	return 4
}

// fanEvent settles one event of the fan-out: it is acked once every delivery
// is settled, or put back when one of them could not be (a NATS failure):
// deliveries already made are then recognised by the ledger, and tasks
// already stored by their Nats-Msg-Id.
type fanEvent struct {
	d    *Dispatcher
	msg  natsjs.Msg
	size int64        // bytes taken from the dispatcher's byte budget
	left atomic.Int32 // deliveries not settled
	// holding counts the deliveries not over: a guard settles its
	// delivery while the request, which holds the payload, goes on, so
	// the bytes are given back when the last one is over, not settled.
	holding atomic.Int32
	failed  atomic.Bool
	// forsaken: a delivery was given up unattempted because the event
	// may be someone else's by now (see late): the event is not acked; it
	// is put back (settle) unless AckWait may have passed.
	forsaken atomic.Bool
	pulled   time.Time // when the pull that brought it was sent
}

// over notes that one of f's deliveries is over, request included.
func (f *fanEvent) over() {
	if f.holding.Add(-1) == 0 {
		f.d.unsettledBytes.release(f.size)
	}
}

func (f *fanEvent) settle(ok bool) {
	if !ok {
		f.failed.Store(true)
	}
	if f.left.Add(-1) != 0 {
		return
	}
	if f.forsaken.Load() {
		// No ack: it would lose the forsaken delivery. A nak puts the
		// event back at once while the server cannot have handed it out
		// again yet (it does after AckWait); otherwise the event would
		// wait out the rest of AckWait, a stall at the end of a burst.
		// Forsaken again (a process that stays starved, or acks that stay
		// unanswered), it comes back later each time, so that it does not
		// spin through MaxDeliver to the safety net's dead letter without
		// an attempt.
		if time.Since(f.pulled) < f.d.fanoutAckWait*3/4 {
			if err := f.msg.NakWithDelay(forsakenDelay(f.msg)); err != nil {
				f.d.log.Debug("hand back forsaken event", "err", err)
			}
		}
	} else if f.failed.Load() {
		if err := f.msg.NakWithDelay(2*time.Second + jitter(3*time.Second)); err != nil {
			f.d.log.Warn("nak event", "err", err)
		}
	} else if err := f.d.ackDelivered(f.msg); err != nil {
		f.d.log.Warn("ack event", "err", err)
	}
	<-f.d.unsettled
}

// forsakenDelay is how long a forsaken event waits before it comes back:
// at once the first time, then 200 ms more for each delivery, at most 5 s.
func forsakenDelay(msg natsjs.Msg) time.Duration {
	meta, err := msg.Metadata()
	if err != nil || meta.NumDelivered <= 1 {
		return 0
	}
	return min(time.Duration(meta.NumDelivered-1)*200*time.Millisecond, 5*time.Second)
}

// eventOf reads the event of a HOOKJET_EVENTS message. One published
// without Nats-Msg-Id gets the id seq_<stream sequence>, and noID is set.
func eventOf(msg natsjs.Msg, meta *natsjs.MsgMetadata) (ev event, noID bool) {
	ev = event{seq: meta.Sequence.Stream, at: meta.Timestamp}
	ev.key = strconv.FormatUint(ev.seq, 10)
	subj := msg.Subject()
	ev.typ = subj[min(len(jetstream.EventsPrefix), len(subj)):]
	ev.id = msg.Headers().Get(jetstream.HdrMsgID)
	ev.tenant, ev.badTenant = eventTenant(msg.Headers())
	if ev.id == "" {
		ev.id = "seq_" + ev.key
		noID = true
	}
	return ev, noID
}

// fanOut delivers one event to every endpoint whose patterns match it.
func (d *Dispatcher) fanOut(ctx context.Context, p pulledEvent) {
	msg := p.msg
	meta, err := msg.Metadata()
	if err != nil {
		d.log.Error("event without metadata", "err", err)
		<-d.unsettled
		return
	}
	ev, noID := eventOf(msg, meta)
	if noID && meta.NumDelivered == 1 {
		d.o.Metrics.MissingID.Inc() // once per event: its first fan-out
	}
	if d.duplicate(&ev) {
		d.o.Metrics.Duplicates.WithLabelValues("ledger").Inc()
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack duplicate event", "err", err)
		}
		<-d.unsettled
		return
	}
	var buf [8]string
	targets := d.table.Match(ev.tenant, ev.typ, buf[:0])
	if ev.badTenant != "" {
		d.rejectBadTenant(msg, &ev, targets) // dispatch/tenant.go
		<-d.unsettled
		return
	}
	if len(targets) == 0 {
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack event", "err", err)
		}
		<-d.unsettled
		return
	}
	f := &fanEvent{d: d, msg: msg, size: int64(len(msg.Data())), pulled: p.sent}
	if !d.unsettledBytes.acquire(ctx, f.size) {
		if err := msg.Nak(); err != nil {
			d.log.Debug("nak event at shutdown", "err", err)
		}
		<-d.unsettled
		return
	}
	f.left.Store(int32(len(targets)))
	f.holding.Store(int32(len(targets)))
	exhausted := meta.NumDelivered >= uint64(jetstream.EventsMaxDeliver-1)
	for _, id := range targets {
		e := d.endpoint(id)
		if e == nil || d.guards.inFlight(id, ev.id) {
			// Removed meanwhile, or an earlier delivery of this event is
			// still in flight there: the event came back because another
			// of its deliveries could not be stored, and this one is
			// covered by its guard.
			f.settle(true)
			f.over()
			continue
		}
		dl := &delivery{e: e, s: d.current(e), ev: &ev, data: msg.Data(), hdr: msg.Headers(), done: f.settle}
		d.guarded(dl, f.over)
		if d.alreadyDelivered(dl) {
			continue
		}
		if ordered(dl) {
			// Its key's turn comes in the ordered lane (lane_engine.go).
			d.enqueueOrdered(dl)
			continue
		}
		if exhausted {
			// The server is about to give up on the event after as many
			// deliveries: NATS failures, shutdowns and crashes, never
			// attempts (those are a task's). Hand every delivery on as a
			// task, which carries its own attempt count.
			d.park(dl, "redelivered")
			continue
		}
		dl.fan = f // attempted only while f can still be settled (late)
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
		// The ledger also holds the ids every other process accepted
		// (followed from HOOKJET_SEEN); tell them about this one.
		d.shared.announce(ev.id, ev.seq)
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
		d.launch(ctx, dl, adm, false)
	case "in_flight":
		waits, fast := d.startWaiting(dl.e, dl.s)
		if !waits {
			d.park(dl, "in_flight")
			return
		}
		d.inflight.Add(1)
		go func() {
			defer d.inflight.Done()
			ok := dl.e.slots.acquire(ctx, inFlightWait)
			d.stopWaiting(dl.e, fast)
			if !ok {
				d.park(dl, "in_flight")
				return
			}
			adm, cause := d.admitHolding(dl.e, dl.s)
			if cause != "" {
				d.park(dl, cause)
				return
			}
			d.launch(ctx, dl, adm, false)
		}()
	default:
		d.park(dl, cause)
	}
}

// startWaiting reports whether a fan-out delivery may wait for one of e's
// in-flight slots, and which budget the wait takes (stopWaiting gives it
// back). Each wait holds its event unsettled, so the waits are bounded:
//
//   - any endpoint: at most 4 x max_in_flight deliveries (a busy healthy
//     endpoint's momentary peak), and never more than a quarter of the
//     fan-out's unsettled events; worker.concurrency such waits in the
//     process. A saturated endpoint parks the rest at once instead of
//     filling the fan-out's unsettled events.
//   - an endpoint that frees its slots fast (soonFree: every waiting
//     delivery can expect a slot within fastWait at the rate it has been
//     freeing them), past those bounds: up to half the fan-out's unsettled
//     events each, and as many in the process, with the first kind, as the
//     fan-out holds unsettled. In a burst to healthy endpoints the fan-out
//     then holds what it pulled until the endpoints take it, instead of
//     parking it: a parked delivery is a task stored with its payload
//     (replicated on a cluster) and a drain consumer to read it back.
//
// A slow endpoint frees slots seconds apart, so it never gets the second
// budget and cannot hold more of the fan-out than before.
func (d *Dispatcher) startWaiting(e *endpoint, s *settings) (ok, fast bool) {
	n := int(e.slots.waiting.Add(1))
	if n <= min(4*s.ep.MaxInFlight, max(1, cap(d.unsettled)/4)) {
		if int(d.waitingN.Add(1)) <= cap(d.global) {
			return true, false
		}
		d.waitingN.Add(-1)
	}
	if n <= cap(d.unsettled)/2 && e.slots.soonFree(n, s.ep.MaxInFlight, fastWait) {
		if int(d.fastWaitingN.Add(1)+d.waitingN.Load()) <= cap(d.unsettled) {
			return true, true
		}
		d.fastWaitingN.Add(-1)
	}
	e.slots.waiting.Add(-1)
	return false, false
}

// fastWait is how soon a delivery waiting in startWaiting's second budget
// must expect a slot: below inFlightWait, after which it is parked.
const fastWait = inFlightWait * 4 / 5

func (d *Dispatcher) stopWaiting(e *endpoint, fast bool) {
	e.slots.waiting.Add(-1)
	if fast {
		d.fastWaitingN.Add(-1)
		return
	}
	d.waitingN.Add(-1)
}

// admission is what a delivery holds once admitted: a slot of its
// endpoint's in-flight cap and its breaker's permission. release gives both
// back when no attempt is made; after an attempt the breaker is settled by
// its Record and only the slot is released.
type admission struct {
	d       *Dispatcher
	e       *endpoint
	breaker bool
	probe   bool // the breaker's permission is its half-open probe
	// token is the rate-limit reservation until a request spends it;
	// release hands an unspent one back.
	token *rate.Reservation
}

// spend marks the admission's rate-limit token as used by a request.
func (a *admission) spend() { a.token = nil }

func (a *admission) release() {
	if a.token != nil {
		a.token.Cancel()
		a.token = nil
	}
	if a.breaker {
		a.d.o.Breakers.ReleaseProbe(a.e.id, a.probe)
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
	var token *rate.Reservation
	if s.limiter != nil {
		token = s.limiter.Reserve()
		if token.Delay() > 0 {
			token.Cancel()
			e.slots.release()
			return nil, "rate_limit"
		}
	}
	if adm, _ := d.admitBreaker(e, token); adm != nil {
		return adm, ""
	}
	return nil, "breaker"
}

// admitBreaker completes an admission that holds an in-flight slot of e and
// its rate-limit token (nil without a limit) with the breaker's permission,
// or gives both back and says how long until the breaker may allow one.
func (d *Dispatcher) admitBreaker(e *endpoint, token *rate.Reservation) (*admission, time.Duration) {
	ok, probe, wait := d.o.Breakers.AcquireProbe(e.id)
	if ok {
		return &admission{d: d, e: e, breaker: true, probe: probe, token: token}, 0
	}
	if token != nil {
		token.Cancel()
	}
	e.slots.release()
	return nil, wait
}

// launch takes a slot of the global concurrency (worker.concurrency: the
// requests in flight) and attempts dl on a worker goroutine; the slot is
// given back as soon as the request is over. When every worker is busy, a
// fan-out delivery (wait false) waits for one on a goroutine of its own
// (launchSoon), so the fan-out never waits for the pool; a drain's waits
// here.
func (d *Dispatcher) launch(ctx context.Context, dl *delivery, adm *admission, wait bool) {
	select {
	case d.global <- struct{}{}:
	default:
		if !wait {
			d.launchSoon(ctx, dl, adm)
			return
		}
		select {
		case d.global <- struct{}{}:
		case <-ctx.Done():
			adm.release()
			dl.done(false)
			return
		}
	}
	d.start(dl, adm)
}

// launchSoon waits up to inFlightWait for a worker for dl, a fan-out
// delivery that found every worker busy, and parks it when none frees.
// Every endpoint holds at most its share of the workers (poolShare), so a
// full pool is many endpoints' requests, which free workers within
// milliseconds when they are healthy: parking at once made a momentary peak
// (a burst after a slow fsync) a synced task write and a drain per
// delivery, which slowed the next round further. At most
// worker.concurrency deliveries wait in the process; past that they are
// parked at once.
func (d *Dispatcher) launchSoon(ctx context.Context, dl *delivery, adm *admission) {
	if int(d.workerWaits.Add(1)) > cap(d.global) {
		d.workerWaits.Add(-1)
		adm.release()
		d.park(dl, "concurrency")
		return
	}
	d.inflight.Add(1)
	go func() {
		defer d.inflight.Done()
		t := time.NewTimer(inFlightWait)
		defer t.Stop()
		select {
		case d.global <- struct{}{}:
			d.workerWaits.Add(-1)
			d.start(dl, adm)
			return
		case <-t.C:
			d.workerWaits.Add(-1)
			adm.release()
			d.park(dl, "concurrency")
		case <-ctx.Done():
			d.workerWaits.Add(-1)
			adm.release()
			dl.done(false)
		}
	}()
}

// start attempts dl, which holds adm and a worker, on a goroutine of its
// own.
func (d *Dispatcher) start(dl *delivery, adm *admission) {
	m := d.o.Metrics
	d.inflight.Add(1)
	m.InFlight.Set(float64(d.inFlightN.Add(1)))
	d.watch(dl)
	go func() {
		defer d.inflight.Done()
		// The worker goes back once the request is over, before what
		// follows it (a retry's or a dead letter's store, fsynced in the
		// durable default): storing a dead endpoint's failures never holds
		// workers that healthy endpoints' requests need.
		held := true
		free := func() {
			if held {
				held = false
				<-d.global
				m.InFlight.Set(float64(d.inFlightN.Add(-1)))
			}
		}
		d.attempt(dl, adm, free)
		free() // no request was made
	}()
}

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
func (d *fanout) runFanout(ctx context.Context, cons natsjs.Consumer) {
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
		from := d.floor.Load() + 1
		for ctx.Err() == nil {
			c, err := jetstream.EnsureFanoutConsumerFrom(ctx, d.js, d.ackWait, from)
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
func (d *fanout) consumeFanout(ctx context.Context, cons natsjs.Consumer) error {
	var workers, recv sync.WaitGroup
	// The pulls only fill the events held ahead; the fan-out workers take
	// each with an unsettled slot: a slow NATS call of one event (a task's
	// publish over the network) delays one worker, not the pulls.
	ahead := newAheadQueue(int64(d.maxMsg))
	info := cons.CachedInfo()
	p := newFanoutPuller(d.conn, info.Stream, info.Name, ahead)
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
func (d *fanout) nextPull(ctx context.Context, p *fanoutPuller, failed <-chan error) error {
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
func (d *fanout) takeOn(ctx context.Context, p pulledEvent) {
	if time.Since(p.at) < d.ackWait/2 {
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
func (d *fanout) fanoutWorkers() int {
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
	d    *fanout
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
		if time.Since(f.pulled) < f.d.ackWait*3/4 {
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
func (d *fanout) fanOut(ctx context.Context, p pulledEvent) {
	msg := p.msg
	meta, err := msg.Metadata()
	if err != nil {
		d.log.Error("event without metadata", "err", err)
		<-d.unsettled
		return
	}
	ev, noID := eventOf(msg, meta)
	if noID && meta.NumDelivered == 1 {
		d.metrics.MissingID.Inc() // once per event: its first fan-out
	}
	if d.duplicate(&ev) {
		d.metrics.Duplicates.WithLabelValues("ledger").Inc()
		if err := msg.Ack(); err != nil {
			d.log.Warn("ack duplicate event", "err", err)
		}
		<-d.unsettled
		return
	}
	var buf [8]string
	targets := d.match.match(&ev, buf[:0])
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
		e := d.eps.endpoint(id)
		if e == nil || d.guards.inFlight(id, ev.id) {
			// Removed meanwhile, or an earlier delivery of this event is
			// still in flight there: the event came back because another
			// of its deliveries could not be stored, and this one is
			// covered by its guard.
			f.settle(true)
			f.over()
			continue
		}
		dl := &delivery{e: e, s: d.eps.current(e), ev: &ev, data: msg.Data(), hdr: msg.Headers(), done: f.settle}
		d.guarded(dl, f.over)
		if d.alreadyDelivered(dl) {
			continue
		}
		if ordered(dl) {
			// Its key's turn comes in the ordered lane (lane.go).
			d.ordered.enqueue(dl)
			continue
		}
		if exhausted {
			// The server is about to give up on the event after as many
			// deliveries: NATS failures, shutdowns and crashes, never
			// attempts (those are a task's). Hand every delivery on as a
			// task, which carries its own attempt count.
			d.settle.park(dl, "redelivered")
			continue
		}
		dl.fan = f // attempted only while f can still be settled (late)
		d.route(ctx, dl)
	}
}

// duplicate reports whether ev's id was already accepted as another message.
func (d *fanout) duplicate(ev *event) bool {
	_, dup, err := d.ledger.FirstSeen(ev.id, ev.seq)
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
func (d *fanout) alreadyDelivered(dl *delivery) bool {
	done, err := d.ledger.Delivered(dl.e.id, dl.ev.id)
	if err != nil || !done {
		return false
	}
	d.metrics.Duplicates.WithLabelValues("delivered").Inc()
	dl.done(true)
	return true
}

// route sends dl now if its endpoint can take it, waits briefly for an
// in-flight slot, or parks it as a task.
func (d *fanout) route(ctx context.Context, dl *delivery) {
	if 2*dl.s.ep.Timeout+15*time.Second > d.ackWait {
		d.settle.park(dl, "slow")
		return
	}
	adm, cause := d.gate.admit(dl.e, dl.s)
	switch cause {
	case "":
		d.gate.launch(ctx, dl, adm, false)
	case "in_flight":
		waits, fast := d.gate.startWaiting(dl.e, dl.s)
		if !waits {
			d.settle.park(dl, "in_flight")
			return
		}
		d.inflight.Add(1)
		go func() {
			defer d.inflight.Done()
			ok := dl.e.slots.acquire(ctx, inFlightWait)
			d.gate.stopWaiting(dl.e, fast)
			if !ok {
				d.settle.park(dl, "in_flight")
				return
			}
			adm, cause := d.gate.admitHolding(dl.e, dl.s)
			if cause != "" {
				d.settle.park(dl, cause)
				return
			}
			d.gate.launch(ctx, dl, adm, false)
		}()
	default:
		d.settle.park(dl, cause)
	}
}

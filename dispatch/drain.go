package dispatch

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/hookjet/hookjet/jetstream"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/breaker"
)

// maxDrains bounds the drains one process runs at a time, and so the
// short-lived consumers it adds to the fixed ones.
const maxDrains = 64

// drainer runs the drains: for each endpoint with tasks that can take them
// now, a short-lived durable consumer "drain-<id>" filtered on the
// endpoint's task subject (shared by every process, so they split the work;
// HOOKJET_TASKS is a work queue, so one consumer per subject). It costs
// nothing per endpoint without tasks: the due map holds only endpoints that
// have some, and one goroutine looks at it.
type drainer struct {
	d    *Dispatcher
	kick chan struct{}

	mu      sync.Mutex
	due     map[string]time.Time // endpoints with tasks -> when to look next
	running map[string]bool
	renoted map[string]bool // tasks noted while a drain ran: look again after it
	wg      sync.WaitGroup
}

func newDrainer(d *Dispatcher) *drainer {
	return &drainer{d: d, kick: make(chan struct{}, 1), due: map[string]time.Time{}, running: map[string]bool{}, renoted: map[string]bool{}}
}

// note records that endpoint id has tasks due at at (zero: now).
func (r *drainer) note(id string, at time.Time) {
	r.mu.Lock()
	if t, ok := r.due[id]; !ok || at.Before(t) {
		r.due[id] = at
	}
	if r.running[id] {
		r.renoted[id] = true
	}
	r.mu.Unlock()
	if at.IsZero() {
		r.poke()
	}
}

// wake tells the drainer that endpoint id can take deliveries again at at
// (zero: now), or not before at (a hold, an open breaker).
func (r *drainer) wake(id string, at time.Time) {
	r.mu.Lock()
	if _, ok := r.due[id]; ok {
		r.due[id] = at
	}
	r.mu.Unlock()
	r.poke()
}

func (r *drainer) poke() {
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

// run starts drains as endpoints become due, and every rescan looks for
// tasks this process does not know about (stored by another process, or
// before a restart).
func (r *drainer) run(ctx context.Context) {
	defer r.wg.Wait()
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	rescan := time.NewTicker(10 * time.Second)
	defer rescan.Stop()
	r.rescan(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-rescan.C:
			r.rescan(ctx)
		case <-tick.C:
		case <-r.kick:
		}
		r.startDue(ctx)
	}
}

func (r *drainer) rescan(ctx context.Context) {
	d := r.d
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(sctx, jetstream.TasksStream)
	if err != nil {
		d.log.Debug("rescan tasks", "err", err)
		return
	}
	info, err := st.Info(sctx, natsjs.WithSubjectFilter(jetstream.TasksPrefix+"*"))
	if err != nil {
		d.log.Debug("rescan tasks", "err", err)
		return
	}
	for subj, n := range info.State.Subjects {
		id := strings.TrimPrefix(subj, jetstream.TasksPrefix)
		e := d.endpoint(id)
		if n == 0 || e == nil {
			continue
		}
		// Tasks stored before a restart or by another process count
		// toward max_backlog too; the busy ones this process knows of
		// do not.
		if cur, n := e.backlog.Load(), int64(n)-e.busy.Load(); n > cur {
			e.backlog.CompareAndSwap(cur, n)
		}
		r.note(id, time.Time{})
	}
}

func (r *drainer) startDue(ctx context.Context) {
	d := r.d
	now := d.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, at := range r.due {
		if len(r.running) >= maxDrains {
			return
		}
		if r.running[id] || at.After(now) {
			continue
		}
		e := d.endpoint(id)
		if e == nil {
			delete(r.due, id) // not ours (now): the tasks wait for it or expire
			continue
		}
		expireOnly := false
		if cause, until := d.blocked(id, now); cause == "disabled" {
			// Nothing is delivered, but what waits past retry.max_age
			// becomes a dead letter, so one disabled customer never fills
			// the stream for the others.
			expireOnly = true
			r.due[id] = now.Add(expiryCheck(d.current(e).ep.Retry.MaxAge))
		} else if cause != "" {
			r.due[id] = until
			continue
		}
		if h, ok := d.o.Breakers.Health(id); ok && h.State == breaker.Open && h.OpenUntil.After(now) {
			r.due[id] = h.OpenUntil
			continue
		}
		r.running[id] = true
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			var next time.Time
			var empty bool
			if expireOnly {
				empty = r.expire(ctx, e)
			} else {
				next, empty = r.drain(ctx, e)
			}
			r.mu.Lock()
			delete(r.running, id)
			renoted := r.renoted[id]
			delete(r.renoted, id)
			switch {
			case empty && renoted:
				r.due[id] = time.Time{} // a task came while the drain finished
			case empty:
				delete(r.due, id)
			case !expireOnly:
				r.due[id] = next
			}
			r.mu.Unlock()
		}()
	}
}

// maxDrainFetch bounds the tasks one drain request takes: at most this many
// deliveries of one endpoint start from one round trip.
const maxDrainFetch = 64

// drainSlice bounds one drain's turn: then it ends and the endpoint is due
// again at once, behind the other due endpoints, so a large backlog never
// keeps the others' drains waiting. drainPoll is when an endpoint whose
// in-flight cap (or share of the workers) is full is looked at again.
const (
	drainSlice = 2 * time.Second
	drainPoll  = 250 * time.Millisecond
)

// drain delivers e's due tasks while e can take them, for at most
// drainSlice. It never waits for e: when e cannot take a delivery now (its
// in-flight cap, a rate-limit token, its breaker), the drain ends and says
// when to look again. It returns that time, or empty when e has no task
// left (its consumer is then deleted).
//
// Its consumer is made only once e can take a delivery, and deleted when
// the drain ends because e cannot take one for a while (a rate limit, a
// breaker, a hold): drain consumers stay as many as the drains running,
// not as the endpoints drained within the consumers' inactivity threshold.
func (r *drainer) drain(ctx context.Context, e *endpoint) (next time.Time, empty bool) {
	d := r.d
	s := d.current(e)
	adm, wait := d.admitNow(ctx, e, s)
	if adm == nil {
		return wait, false
	}
	cons, err := jetstream.EnsureDrainConsumer(ctx, d.o.JS, s.ep)
	if err != nil {
		adm.release()
		d.log.Warn("open drain", "endpoint", e.id, "err", err)
		return d.now().Add(5 * time.Second), false
	}
	var mine sync.WaitGroup
	adms := make([]*admission, 0, maxDrainFetch)
	end := d.now().Add(drainSlice)
	for ctx.Err() == nil {
		if adm == nil {
			if d.now().After(end) {
				return d.now(), false
			}
			s = d.current(e)
			adm, wait = d.admitNow(ctx, e, s)
			if adm == nil {
				if wait.After(d.now().Add(drainPoll)) {
					r.close(ctx, e.id, cons, &mine)
				}
				return wait, false
			}
		}
		// Take as many more admissions as e can use at this moment and
		// fetch that many tasks in one request: a recovering endpoint's
		// backlog is not paced by a round trip per task, and no task is
		// fetched without an admission for it, so none is naked back.
		adms = append(adms[:0], adm)
		for len(adms) < maxDrainFetch {
			a, _ := d.admit(e, s)
			if a == nil {
				break
			}
			adms = append(adms, a)
		}
		n, err := r.fetch(ctx, cons, e, s, adms, &mine, true)
		if n == 0 && err == nil {
			// Nothing ready: wait a moment with one admission, for a
			// scheduled retry the server is about to turn into a task.
			for _, a := range adms[1:] {
				a.release()
			}
			adms = adms[:1]
			n, err = r.fetch(ctx, cons, e, s, adms, &mine, false)
		}
		for _, a := range adms[n:] {
			a.release()
		}
		adm = nil
		if n > 0 {
			continue
		}
		if err != nil && ctx.Err() == nil {
			d.log.Warn("drain", "endpoint", e.id, "err", err)
			return d.now().Add(5 * time.Second), false
		}
		return time.Time{}, d.dropIfEmpty(ctx, e.id)
	}
	if adm != nil {
		adm.release()
	}
	return time.Time{}, false
}

// fetch takes up to len(adms) tasks, at once (noWait) or waiting up to a
// second, and hands each to handleTask with one of adms: the first n are
// spent, the caller releases the others.
func (r *drainer) fetch(ctx context.Context, cons natsjs.Consumer, e *endpoint, s *settings, adms []*admission, mine *sync.WaitGroup, noWait bool) (n int, err error) {
	var batch natsjs.MessageBatch
	if noWait {
		batch, err = cons.FetchNoWait(len(adms))
	} else {
		batch, err = cons.Fetch(len(adms), natsjs.FetchMaxWait(300*time.Millisecond))
	}
	if err == nil {
		for m := range batch.Messages() {
			mine.Add(1)
			r.handleTask(ctx, e, s, m, adms[n], mine.Done)
			n++
		}
		err = batch.Error()
	}
	if errors.Is(err, natsjs.ErrNoMessages) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return n, err
}

// handleTask delivers one task.
func (r *drainer) handleTask(ctx context.Context, e *endpoint, s *settings, msg natsjs.Msg, adm *admission, finished func()) {
	d := r.d
	meta, err := msg.Metadata()
	if err != nil {
		finished()
		adm.release()
		return
	}
	ev, st := taskOf(msg.Headers(), meta.Timestamp)
	dl := &delivery{e: e, s: d.current(e), ev: &ev, st: st, data: msg.Data(), hdr: msg.Headers()} // issue 24: the settings in force now, not when a waiting fetch began
	dl.done = func(ok bool) {
		defer finished()
		var err error
		if ok {
			e.consumed(taskSize(len(msg.Data())), msg.Headers().Get(hdrBusy) != "")
			err = msg.Ack()
		} else {
			err = msg.NakWithDelay(2*time.Second + jitter(3*time.Second))
		}
		if err != nil {
			dl.log(d.log, -4, "settle task", "err", err)
		}
	}
	if staleTask(msg.Headers(), s.ep.CreatedAt) {
		adm.release()
		dl.log(d.log, slog.LevelInfo, "task of an earlier endpoint with this id discarded")
		dl.done(true)
		return
	}
	// A redelivery asked for through the API goes again although the
	// ledger knows the endpoint had the event: that is its point.
	if !strings.HasPrefix(ev.key, redeliverKey) && d.alreadyDelivered(dl) {
		adm.release()
		return
	}
	if meta.NumDelivered >= uint64(jetstream.TasksMaxDeliver-1) {
		// The server is about to give up on the task after as many
		// deliveries: NATS failures and shutdowns, which are not attempts
		// (those travel in its headers). Store it afresh.
		adm.release()
		d.goJob(func() { d.requeue(dl) })
		return
	}
	size := int64(len(msg.Data()))
	if !d.unsettledBytes.acquire(ctx, size) {
		adm.release()
		dl.done(false)
		return
	}
	settle := dl.done
	dl.done = func(ok bool) {
		d.unsettledBytes.release(size)
		settle(ok)
	}
	d.launch(ctx, dl, adm, true)
}

// requeue stores dl's task again as a new message, with the same attempt
// state, and settles the old one.
func (d *Dispatcher) requeue(dl *delivery) {
	msg := taskFor(dl, time.Time{})
	msg.Header.Set(jetstream.HdrMsgID, msg.Header.Get(jetstream.HdrMsgID)+"-q"+strconv.FormatInt(d.now().UnixNano(), 36))
	busy := dl.hdr.Get(hdrBusy)
	if busy != "" {
		msg.Header.Set(hdrBusy, busy)
	}
	if err := d.publish(msg); err != nil {
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

// expiryCheck is how often a disabled endpoint's tasks are checked for
// retry.max_age.
func expiryCheck(maxAge time.Duration) time.Duration {
	return min(time.Minute, max(time.Second, maxAge/4))
}

// expire dead-letters a disabled endpoint's tasks that are past
// retry.max_age, oldest first, and stops at the first that is not. It reads
// the stream directly, without a consumer, so checking costs the tasks no
// JetStream delivery. It reports whether the endpoint has no task left.
func (r *drainer) expire(ctx context.Context, e *endpoint) (empty bool) {
	d := r.d
	st, err := d.o.JS.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return false
	}
	s := d.current(e)
	for seq := uint64(1); ctx.Err() == nil; {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := st.GetMsg(gctx, seq, natsjs.WithGetMsgSubject(jetstream.TasksPrefix+e.id))
		cancel()
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return true
		}
		if err != nil {
			return false
		}
		ev, ast := taskOf(raw.Header, raw.Time)
		reason, why, fresh := precheck(0, 0, s.ep.Settings, ev.at, d.now())
		if fresh {
			return false
		}
		if ast.Error == "" {
			ast.Error = why + " while the endpoint was disabled"
		}
		ok := false
		d.deadLetter(&delivery{e: e, s: s, ev: &ev, st: ast, data: raw.Data, hdr: raw.Header, done: func(v bool) { ok = v }}, reason)
		if !ok {
			return false
		}
		if err := st.DeleteMsg(ctx, raw.Sequence); err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
			d.log.Warn("remove expired task", "endpoint", e.id, "err", err)
			return false
		}
		e.consumed(taskSize(len(raw.Data)), raw.Header.Get(hdrBusy) != "")
		seq = raw.Sequence + 1
	}
	return false
}

// admitNow admits a delivery to e: an in-flight slot (within e's share of
// the workers), a rate-limit token and the breaker's permission. It waits
// only for a slot, at most drainPoll: the endpoint's own deliveries free
// them as they finish. When e cannot take one it returns nil and when to
// look again: a drain never sleeps on a rate limit or a breaker while it
// holds one of the process's drains.
func (d *Dispatcher) admitNow(ctx context.Context, e *endpoint, s *settings) (*admission, time.Time) {
	now := d.now()
	if cause, until := d.blocked(e.id, now); cause != "" {
		return nil, until
	}
	if !e.slots.tryAcquire() {
		d.countDeferral(e, "in_flight")
		if !e.slots.acquireFirst(ctx, drainPoll) {
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
	adm, wait := d.admitBreaker(e, token)
	if adm != nil {
		return adm, time.Time{}
	}
	d.countDeferral(e, "breaker")
	return nil, now.Add(max(wait, drainPoll))
}

// drainSettle bounds how long a drain that ends waits for its deliveries
// before it deletes its consumer: one still unsettled keeps the consumer.
const drainSettle = time.Second

// close deletes the drain consumer of endpoint id once this drain's
// deliveries (mine) are settled, unless it holds unsettled tasks or waiting
// pulls (another process's drain of id); otherwise the consumer's
// inactivity threshold removes it.
func (r *drainer) close(ctx context.Context, id string, cons natsjs.Consumer, mine *sync.WaitGroup) {
	settled := make(chan struct{})
	go func() {
		mine.Wait()
		close(settled)
	}()
	t := time.NewTimer(drainSettle)
	defer t.Stop()
	select {
	case <-settled:
	case <-t.C:
		return
	case <-ctx.Done():
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil || info.NumAckPending > 0 || info.NumWaiting > 0 {
		return
	}
	if err := r.d.o.JS.DeleteConsumer(ctx, jetstream.TasksStream, jetstream.DrainConsumerName(id)); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
		r.d.log.Debug("delete drain consumer", "endpoint", id, "err", err)
	}
}

// dropIfEmpty deletes e's drain consumer when its subject holds no task at
// all (none waiting, none in another process's hands), so drains stay
// short-lived; otherwise the consumer's inactivity threshold removes it.
func (d *Dispatcher) dropIfEmpty(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return false
	}
	info, err := st.Info(ctx, natsjs.WithSubjectFilter(jetstream.TasksPrefix+id))
	// With a subject filter, State.Msgs is still the whole stream's count:
	// the subject's own is in State.Subjects.
	if err != nil || info.State.Subjects[jetstream.TasksPrefix+id] > 0 {
		return false
	}
	if err := d.o.JS.DeleteConsumer(ctx, jetstream.TasksStream, jetstream.DrainConsumerName(id)); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
		d.log.Debug("delete drain consumer", "endpoint", id, "err", err)
	}
	return true
}

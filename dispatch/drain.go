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
	// closing are the endpoints whose ended drain waits for its
	// deliveries before it deletes its consumer: each counts as a drain
	// running, so that drain consumers stay at most maxDrains.
	closing map[string]bool
	// left are the endpoints whose drain ended with its consumer still
	// standing (the endpoint due again within drainPoll or at once, a
	// slice spent, or tasks not yet settled at the server), and since
	// when. Each counts as a drain running until a drain of it deletes
	// it, the server's inactivity threshold does, or startDue deletes it
	// to make room for another endpoint: drain consumers stay at most
	// maxDrains without one made and deleted per short wait.
	left    map[string]time.Time
	renoted map[string]bool // tasks noted while a drain ran: look again after it
	// sched holds, per endpoint, the retries this process stored as
	// schedules and has not seen come back as tasks: event key -> due
	// time. A drain that finds nothing while one is due, or later, keeps
	// the endpoint due for it instead of forgetting it until a rescan.
	sched map[string]map[string]time.Time
	// held are the tasks this process has taken and not settled, kept
	// alive with InProgress (keepAlive) so that the drain consumers' short
	// AckWait hands them back soon after a crash and never while they are
	// worked on.
	held map[*heldTask]struct{}
	// taken are the endpoints whose tasks were taken by a process that
	// had not settled them when this one started (a crashed one, or
	// another still delivering): how many, and when JetStream gives them
	// back at the latest.
	taken map[string]takenTasks
	// quickUntil: until then the drainer rescans every quickRescan, not
	// every rescanEvery, because retries stored as schedules before this
	// process started (which it cannot tell the due times of) may be due.
	quickUntil time.Time
	wg         sync.WaitGroup
}

type heldTask struct {
	msg   natsjs.Msg
	since time.Time
}

type takenTasks struct {
	n     int
	until time.Time
}

func newDrainer(d *Dispatcher) *drainer {
	return &drainer{d: d, kick: make(chan struct{}, 1), due: map[string]time.Time{}, running: map[string]bool{}, closing: map[string]bool{}, left: map[string]time.Time{}, renoted: map[string]bool{}, sched: map[string]map[string]time.Time{},
		held: map[*heldTask]struct{}{}, taken: map[string]takenTasks{}}
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

// noteRetry records that the retry of the event with key was stored as a
// schedule due at at: the server turns it into a task at about that time.
func (r *drainer) noteRetry(id, key string, at time.Time) {
	r.mu.Lock()
	m := r.sched[id]
	if m == nil {
		m = map[string]time.Time{}
		r.sched[id] = m
	}
	if _, ok := m[key]; !ok && len(m) >= maxSchedNoted {
		// Keep the earliest: a later one is found by a rescan.
		var last string
		for k, t := range m {
			if last == "" || t.After(m[last]) {
				last = k
			}
		}
		if !at.Before(m[last]) {
			r.mu.Unlock()
			r.note(id, at)
			return
		}
		delete(m, last)
	}
	m[key] = at
	r.mu.Unlock()
	r.note(id, at)
}

// took records that a drain took the task of the event with key: it is no
// longer awaited as a retry.
func (r *drainer) took(id, key string) {
	r.mu.Lock()
	if m := r.sched[id]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(r.sched, id)
		}
	}
	r.mu.Unlock()
}

// firstRetry is when the earliest retry of endpoint id this process stored
// is due; zero when none is.
func (r *drainer) firstRetry(id string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	var first time.Time
	for _, at := range r.sched[id] {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// hold notes that msg is being worked on, until release.
func (r *drainer) hold(msg natsjs.Msg) *heldTask {
	h := &heldTask{msg: msg, since: r.d.now()}
	r.mu.Lock()
	r.held[h] = struct{}{}
	r.mu.Unlock()
	return h
}

func (r *drainer) release(h *heldTask) {
	r.mu.Lock()
	delete(r.held, h)
	r.mu.Unlock()
}

// keepAlive tells JetStream, every jetstream.DrainHeartbeat until ctx ends,
// that the tasks this process holds are still being worked on. The
// dispatcher runs it on the send context, so it goes on through a
// shutdown's grace period.
func (r *drainer) keepAlive(ctx context.Context) {
	t := time.NewTicker(jetstream.DrainHeartbeat)
	defer t.Stop()
	var due []natsjs.Msg
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		cutoff := r.d.now().Add(-jetstream.DrainHeartbeat / 2)
		due = due[:0]
		r.mu.Lock()
		for h := range r.held {
			if h.since.Before(cutoff) {
				due = append(due, h.msg)
			}
		}
		r.mu.Unlock()
		for _, m := range due {
			if err := m.InProgress(); err != nil {
				r.d.log.Debug("keep a task alive", "err", err)
			}
		}
	}
}

// noteTaken records, at start, the tasks that drain consumers have handed
// to a process and not had settled: a crashed process's come back within
// their AckWait. It returns how many, for how many endpoints, and the
// longest AckWait among them.
func (r *drainer) noteTaken(ctx context.Context) (tasks, endpoints int, wait time.Duration) {
	d := r.d
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return 0, 0, 0
	}
	now := d.now()
	l := st.ListConsumers(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	for ci := range l.Info() {
		id, ok := strings.CutPrefix(ci.Name, jetstream.DrainPrefix)
		if !ok || ci.NumAckPending == 0 {
			continue
		}
		r.taken[id] = takenTasks{n: ci.NumAckPending, until: now.Add(ci.Config.AckWait)}
		tasks += ci.NumAckPending
		endpoints++
		wait = max(wait, ci.Config.AckWait)
	}
	if err := l.Err(); err != nil {
		d.log.Debug("list drain consumers", "err", err)
	}
	return tasks, endpoints, wait
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
	lo.Taken, lo.TakenEndpoints, lo.TakenFor = d.drains.noteTaken(ctx)
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

// takenWait is how many of id's tasks wait for JetStream to give them
// back from a process that took them before this one started, and until
// when at the latest; zero once that time has passed.
func (r *drainer) takenWait(id string, now time.Time) (int, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.taken[id]
	if !ok {
		return 0, time.Time{}
	}
	if !now.Before(t.until) {
		delete(r.taken, id)
		return 0, time.Time{}
	}
	return t.n, t.until
}

// schedLate is how long after its due time a stored retry is still looked
// for: the server fires schedules within about a second of their time;
// one not seen by then was taken by another process or removed.
const schedLate = 5 * time.Second

// nextRetry is when endpoint id should be looked at again for a retry it
// stored as a schedule (zero: none left), forgetting those long overdue.
// The caller holds r.mu.
func (r *drainer) nextRetry(id string, now time.Time) time.Time {
	var next time.Time
	for key, at := range r.sched[id] {
		if now.Sub(at) > schedLate {
			delete(r.sched[id], key)
			continue
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if len(r.sched[id]) == 0 {
		delete(r.sched, id)
		return time.Time{}
	}
	// Due (or about to be): the server fires it any moment now.
	if poll := now.Add(schedPoll); next.Before(poll) {
		return poll
	}
	return next
}

// maxSchedNoted bounds the stored retries noteRetry remembers per endpoint.
const maxSchedNoted = 256

// schedPoll is how often an endpoint with a retry due is looked at until
// the server has turned the retry into a task.
const schedPoll = 100 * time.Millisecond

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

// Rescans: how often the drainer looks for tasks it does not know about,
// and how often while retries stored before this process started may come
// due (a restarted process resumes them within about 5 s of their time:
// docs/architecture.md).
const (
	rescanEvery = 10 * time.Second
	quickRescan = time.Second
	// quickRescanFor bounds the quick rescans after a start: each reads
	// every endpoint's count of due tasks, so an hour of them (the default
	// retry.cap) would cost ten times the usual rescans; the retries due
	// later are found by those, within rescanEvery.
	quickRescanFor = 2 * time.Minute
)

// run starts drains as endpoints become due, and every rescan looks for
// tasks this process does not know about (stored by another process, or
// before a restart).
func (r *drainer) run(ctx context.Context) {
	defer r.wg.Wait()
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	rescan := time.NewTicker(rescanEvery)
	defer rescan.Stop()
	quick := time.NewTicker(quickRescan)
	defer quick.Stop()
	if due, all, ok := r.rescan(ctx); ok && all > due {
		r.quickenForSchedules()
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-rescan.C:
			r.rescan(ctx)
		case <-quick.C:
			r.mu.Lock()
			quickly := r.d.now().Before(r.quickUntil)
			r.mu.Unlock()
			if !quickly {
				break
			}
			if due, all, ok := r.rescan(ctx); ok && all <= due {
				r.mu.Lock()
				r.quickUntil = time.Time{} // no schedule left
				r.mu.Unlock()
			}
		case <-tick.C:
		case <-r.kick:
		}
		r.startDue(ctx)
	}
}

// quickenForSchedules has the drainer rescan every quickRescan: at start
// HOOKJET_TASKS holds more messages than due tasks, schedules stored before
// this process started (retries, guards) whose due times it does not know.
// The server turns each into a due task within the longest retry.cap or
// timeout of any endpoint after it was stored, so the quick rescans end
// then (at most quickRescanFor after the start), or once no schedule is
// left.
func (r *drainer) quickenForSchedules() {
	d := r.d
	var longest time.Duration
	d.mu.RLock()
	for _, e := range d.eps {
		ep := e.set.Load().ep
		longest = max(longest, ep.Retry.Cap, ep.Timeout)
	}
	d.mu.RUnlock()
	r.mu.Lock()
	r.quickUntil = d.now().Add(min(longest+schedLate, quickRescanFor))
	r.mu.Unlock()
}

// rescan notes the endpoints with due tasks and returns how many tasks are
// due and how many messages HOOKJET_TASKS holds (schedules included); false
// when the stream could not be read.
func (r *drainer) rescan(ctx context.Context) (due, all uint64, ok bool) {
	d := r.d
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(sctx, jetstream.TasksStream)
	if err != nil {
		d.log.Debug("rescan tasks", "err", err)
		return 0, 0, false
	}
	info, err := st.Info(sctx, natsjs.WithSubjectFilter(jetstream.TasksPrefix+"*"))
	if err != nil {
		d.log.Debug("rescan tasks", "err", err)
		return 0, 0, false
	}
	for subj, n := range info.State.Subjects {
		due += n
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
	return due, info.State.Msgs, true
}

func (r *drainer) startDue(ctx context.Context) {
	d := r.d
	now := d.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, t := range r.left {
		if now.Sub(t) > jetstream.DrainInactiveThreshold {
			delete(r.left, id) // the server has deleted it
		}
	}
	for id, at := range r.due {
		if r.running[id] || r.closing[id] || at.After(now) {
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
		if _, standing := r.left[id]; !standing && r.inUse() >= maxDrains && !r.evictLeft(ctx) {
			return
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
			retry := r.nextRetry(id, d.now())
			switch {
			case empty && renoted:
				r.due[id] = time.Time{} // a task came while the drain finished
			case empty && !retry.IsZero() && !expireOnly:
				r.due[id] = retry
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
	cons, err := jetstream.EnsureDrainConsumer(ctx, d.o.JS, *s.ep)
	if err != nil {
		adm.release()
		d.log.Warn("open drain", "endpoint", e.id, "err", err)
		return d.now().Add(5 * time.Second), false
	}
	standing := true // until this drain deletes its consumer
	defer func() {
		r.mu.Lock()
		if standing {
			r.left[e.id] = d.now()
		} else {
			delete(r.left, e.id)
		}
		r.mu.Unlock()
	}()
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
					standing = !r.close(ctx, e.id, &mine)
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
		empty = d.dropIfEmpty(ctx, e.id)
		standing = !empty
		return time.Time{}, empty
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
	r.took(e.id, ev.key)
	held := r.hold(msg)
	dl := &delivery{e: e, s: d.current(e), ev: &ev, st: st, data: msg.Data(), hdr: msg.Headers()} // the settings in force now, not when a waiting fetch began
	dl.done = func(ok bool) {
		defer finished()
		r.release(held)
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
	if notForEndpoint(msg.Headers(), &ev, s.ep) {
		adm.release()
		dl.log(d.log, slog.LevelInfo, "task discarded: stored for another endpoint with this id (deleted since), or an event of another tenant", "task_endpoint_created", msg.Headers().Get(hdrIncarnation))
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
	if !d.fan.unsettledBytes.Acquire(ctx, size) {
		adm.release()
		dl.done(false)
		return
	}
	settle := dl.done
	dl.done = func(ok bool) {
		d.fan.unsettledBytes.Release(size)
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
// retry.max_age. Stream order is not age order (a retry or a requeue is
// stored again long after its event was published), so it looks at every
// task, not only up to the first that is still fresh. It reads the stream
// directly, without a consumer, so checking costs the tasks no JetStream
// delivery. It reports whether the endpoint has no task left.
func (r *drainer) expire(ctx context.Context, e *endpoint) (empty bool) {
	d := r.d
	st, err := d.o.JS.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return false
	}
	s := d.current(e)
	left := false
	for seq := uint64(1); ctx.Err() == nil; {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := st.GetMsg(gctx, seq, natsjs.WithGetMsgSubject(jetstream.TasksPrefix+e.id))
		cancel()
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return !left
		}
		if err != nil {
			return false
		}
		seq = raw.Sequence + 1
		ev, ast := taskOf(raw.Header, raw.Time)
		reason, why, fresh := precheck(0, 0, s.ep.Settings, ev.at, d.now())
		if fresh {
			left = true
			continue
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

// drainSettle is how long a drain that ends waits for its deliveries
// before it leaves the deletion of its consumer to a goroutine of its own.
const drainSettle = time.Second

// close deletes the drain consumer of endpoint id once this drain's
// deliveries (mine) are settled, unless it holds unsettled tasks or waiting
// pulls (another process's drain of id). Deliveries not settled within
// drainSettle are waited for in the background, the endpoint counted in
// r.closing meanwhile. It reports whether the consumer is deleted or left
// to the background; one left standing is in r.left.
func (r *drainer) close(ctx context.Context, id string, mine *sync.WaitGroup) bool {
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
		r.mu.Lock()
		r.closing[id] = true
		r.mu.Unlock()
		r.wg.Go(func() {
			deleted := false
			select {
			case <-settled:
				deleted = r.deleteDrained(ctx, id)
			case <-ctx.Done():
			}
			r.mu.Lock()
			delete(r.closing, id)
			if !deleted {
				r.left[id] = r.d.now()
			}
			r.mu.Unlock()
			r.poke()
		})
		return true
	case <-ctx.Done():
		return false
	}
	return r.deleteDrained(ctx, id)
}

// inUse is how many drain consumers this process accounts for: its drains
// running or closing and the consumers it left standing. r.mu is held.
func (r *drainer) inUse() int {
	n := len(r.running) + len(r.closing)
	for id := range r.left {
		if !r.running[id] && !r.closing[id] {
			n++
		}
	}
	return n
}

// evictLeft makes room for a drain under maxDrains: it deletes, in the
// background, a drain consumer this process left standing, counted in
// r.closing until it is gone. It reports false when none is left. r.mu is
// held.
func (r *drainer) evictLeft(ctx context.Context) bool {
	for id, since := range r.left {
		if r.running[id] || r.closing[id] {
			continue
		}
		delete(r.left, id)
		r.closing[id] = true
		r.wg.Go(func() {
			deleted := r.deleteDrained(ctx, id)
			r.mu.Lock()
			delete(r.closing, id)
			if !deleted && !r.running[id] {
				r.left[id] = since // tasks in flight at the server: it stays, and counts
			}
			r.mu.Unlock()
		})
		return true
	}
	return false
}

// deleteDrained deletes id's drain consumer unless it holds unsettled tasks
// or waiting pulls (of another process, or naked with a delay by this one),
// and reports whether it is gone. This process's own acknowledgements are
// asynchronous: an ack count still pending is looked at again twice.
func (r *drainer) deleteDrained(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name := jetstream.DrainConsumerName(id)
	cons, err := r.d.o.JS.Consumer(ctx, jetstream.TasksStream, name)
	if errors.Is(err, natsjs.ErrConsumerNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	info := cons.CachedInfo()
	for try := 0; info.NumAckPending > 0 && info.NumWaiting == 0 && try < 2; try++ {
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			return false
		}
		if info, err = cons.Info(ctx); err != nil {
			return errors.Is(err, natsjs.ErrConsumerNotFound)
		}
	}
	if info.NumAckPending > 0 || info.NumWaiting > 0 {
		return false
	}
	if err := r.d.o.JS.DeleteConsumer(ctx, jetstream.TasksStream, name); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
		r.d.log.Debug("delete drain consumer", "endpoint", id, "err", err)
		return false
	}
	return true
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

package drain

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// maxDrains bounds the drains one process runs at a time, and so the
// short-lived consumers it adds to the fixed ones.
const maxDrains = 64

// Drainer runs the drains: for each endpoint with tasks that can take them
// now, a short-lived durable consumer "drain-<id>" filtered on the
// endpoint's task subject (shared by every process, so they split the work;
// HOOKJET_TASKS is a work queue, so one consumer per subject). It costs
// nothing per endpoint without tasks: the due map holds only endpoints that
// have some, and one goroutine looks at it.
type Drainer struct {
	eng  Engine
	js   natsjs.JetStream
	log  *slog.Logger
	now  func() time.Time
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
	// alive with InProgress (KeepAlive) so that the drain consumers' short
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

// New prepares the drains of the engine's endpoints, which read
// HOOKJET_TASKS through js; Run starts them. log nil: discarded; now nil:
// time.Now.
func New(eng Engine, js natsjs.JetStream, log *slog.Logger, now func() time.Time) *Drainer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	return &Drainer{eng: eng, js: js, log: log, now: now, kick: make(chan struct{}, 1),
		due: map[string]time.Time{}, running: map[string]bool{}, closing: map[string]bool{}, left: map[string]time.Time{}, renoted: map[string]bool{}, sched: map[string]map[string]time.Time{},
		held: map[*heldTask]struct{}{}, taken: map[string]takenTasks{}}
}

// Note records that endpoint id has tasks due at at (zero: now).
func (r *Drainer) Note(id string, at time.Time) {
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

// NoteRetry records that the retry of the event with key was stored as a
// schedule due at at: the server turns it into a task at about that time.
func (r *Drainer) NoteRetry(id, key string, at time.Time) {
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
			r.Note(id, at)
			return
		}
		delete(m, last)
	}
	m[key] = at
	r.mu.Unlock()
	r.Note(id, at)
}

// took records that a drain took the task of the event with key: it is no
// longer awaited as a retry.
func (r *Drainer) took(id, key string) {
	r.mu.Lock()
	if m := r.sched[id]; m != nil {
		delete(m, key)
		if len(m) == 0 {
			delete(r.sched, id)
		}
	}
	r.mu.Unlock()
}

// FirstRetry is when the earliest retry of endpoint id this process stored
// is due; zero when none is.
func (r *Drainer) FirstRetry(id string) time.Time {
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

// schedLate is how long after its due time a stored retry is still looked
// for: the server fires schedules within about a second of their time;
// one not seen by then was taken by another process or removed.
const schedLate = 5 * time.Second

// nextRetry is when endpoint id should be looked at again for a retry it
// stored as a schedule (zero: none left), forgetting those long overdue.
// The caller holds r.mu.
func (r *Drainer) nextRetry(id string, now time.Time) time.Time {
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

// maxSchedNoted bounds the stored retries NoteRetry remembers per endpoint.
const maxSchedNoted = 256

// schedPoll is how often an endpoint with a retry due is looked at until
// the server has turned the retry into a task.
const schedPoll = 100 * time.Millisecond

// Wake tells the drainer that endpoint id can take deliveries again at at
// (zero: now), or not before at (a hold, an open breaker).
func (r *Drainer) Wake(id string, at time.Time) {
	r.mu.Lock()
	if _, ok := r.due[id]; ok {
		r.due[id] = at
	}
	r.mu.Unlock()
	r.poke()
}

func (r *Drainer) poke() {
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

// Run starts drains as endpoints become due, and every rescan looks for
// tasks this process does not know about (stored by another process, or
// before a restart), until ctx ends; then it waits for the drains.
func (r *Drainer) Run(ctx context.Context) {
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
			quickly := r.now().Before(r.quickUntil)
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
func (r *Drainer) quickenForSchedules() {
	longest := r.eng.LongestWait()
	r.mu.Lock()
	r.quickUntil = r.now().Add(min(longest+schedLate, quickRescanFor))
	r.mu.Unlock()
}

// rescan notes the endpoints with due tasks and returns how many tasks are
// due and how many messages HOOKJET_TASKS holds (schedules included); false
// when the stream could not be read.
func (r *Drainer) rescan(ctx context.Context) (due, all uint64, ok bool) {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := r.js.Stream(sctx, jetstream.TasksStream)
	if err != nil {
		r.log.Debug("rescan tasks", "err", err)
		return 0, 0, false
	}
	info, err := st.Info(sctx, natsjs.WithSubjectFilter(jetstream.TasksPrefix+"*"))
	if err != nil {
		r.log.Debug("rescan tasks", "err", err)
		return 0, 0, false
	}
	for subj, n := range info.State.Subjects {
		due += n
		id := strings.TrimPrefix(subj, jetstream.TasksPrefix)
		if n == 0 {
			continue
		}
		e := r.eng.Endpoint(id)
		if e == nil {
			continue
		}
		// Tasks stored before a restart or by another process count
		// toward max_backlog too.
		e.Found(n)
		r.Note(id, time.Time{})
	}
	return due, info.State.Msgs, true
}

func (r *Drainer) startDue(ctx context.Context) {
	now := r.now()
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
		e := r.eng.Endpoint(id)
		if e == nil {
			delete(r.due, id) // not ours (now): the tasks wait for it or expire
			continue
		}
		disabled, notBefore := e.Gate(now)
		expireOnly := false
		if disabled {
			// Nothing is delivered, but what waits past retry.max_age
			// becomes a dead letter, so one disabled customer never fills
			// the stream for the others.
			expireOnly = true
			r.due[id] = now.Add(expiryCheck(e.Current().Config().Retry.MaxAge))
		}
		if !notBefore.IsZero() {
			r.due[id] = notBefore // a hold, an open breaker
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
				empty = r.expire(ctx, id, e)
			} else {
				next, empty = r.drain(ctx, id, e)
			}
			r.mu.Lock()
			delete(r.running, id)
			renoted := r.renoted[id]
			delete(r.renoted, id)
			retry := r.nextRetry(id, r.now())
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

// expiryCheck is how often a disabled endpoint's tasks are checked for
// retry.max_age.
func expiryCheck(maxAge time.Duration) time.Duration {
	return min(time.Minute, max(time.Second, maxAge/4))
}

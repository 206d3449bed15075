package drain

import (
	"context"
	"errors"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/jetstream"
)

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
func (r *Drainer) drain(ctx context.Context, id string, e Endpoint) (next time.Time, empty bool) {
	e = e.Current()
	adm, wait := e.AdmitNow(ctx, drainPoll)
	if adm == nil {
		return wait, false
	}
	cons, err := jetstream.EnsureDrainConsumer(ctx, r.js, *e.Config())
	if err != nil {
		adm.Release()
		r.log.Warn("open drain", "endpoint", id, "err", err)
		return r.now().Add(5 * time.Second), false
	}
	standing := true // until this drain deletes its consumer
	defer func() {
		r.mu.Lock()
		if standing {
			r.left[id] = r.now()
		} else {
			delete(r.left, id)
		}
		r.mu.Unlock()
	}()
	var mine sync.WaitGroup
	adms := make([]Admission, 0, maxDrainFetch)
	end := r.now().Add(drainSlice)
	for ctx.Err() == nil {
		if adm == nil {
			if r.now().After(end) {
				return r.now(), false
			}
			e = e.Current()
			adm, wait = e.AdmitNow(ctx, drainPoll)
			if adm == nil {
				if wait.After(r.now().Add(drainPoll)) {
					standing = !r.close(ctx, id, &mine)
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
			a := e.Admit()
			if a == nil {
				break
			}
			adms = append(adms, a)
		}
		n, err := r.fetch(ctx, cons, id, e, adms, &mine, true)
		if n == 0 && err == nil {
			// Nothing ready: wait a moment with one admission, for a
			// scheduled retry the server is about to turn into a task.
			for _, a := range adms[1:] {
				a.Release()
			}
			adms = adms[:1]
			n, err = r.fetch(ctx, cons, id, e, adms, &mine, false)
		}
		for _, a := range adms[n:] {
			a.Release()
		}
		adm = nil
		if n > 0 {
			continue
		}
		if err != nil && ctx.Err() == nil {
			r.log.Warn("drain", "endpoint", id, "err", err)
			return r.now().Add(5 * time.Second), false
		}
		empty = r.dropIfEmpty(ctx, id)
		standing = !empty
		return time.Time{}, empty
	}
	if adm != nil {
		adm.Release()
	}
	return time.Time{}, false
}

// fetch takes up to len(adms) tasks, at once (noWait) or waiting up to a
// second, and hands each to handleTask with one of adms: the first n are
// spent, the caller releases the others.
func (r *Drainer) fetch(ctx context.Context, cons natsjs.Consumer, id string, e Endpoint, adms []Admission, mine *sync.WaitGroup, noWait bool) (n int, err error) {
	var batch natsjs.MessageBatch
	if noWait {
		batch, err = cons.FetchNoWait(len(adms))
	} else {
		batch, err = cons.Fetch(len(adms), natsjs.FetchMaxWait(300*time.Millisecond))
	}
	if err == nil {
		for m := range batch.Messages() {
			mine.Add(1)
			r.handleTask(ctx, id, e, m, adms[n], mine.Done)
			n++
		}
		err = batch.Error()
	}
	if errors.Is(err, natsjs.ErrNoMessages) || errors.Is(err, context.DeadlineExceeded) {
		err = nil
	}
	return n, err
}

// handleTask hands one task to the engine, held (kept alive) until the
// engine settles it: acked, or naked to come back in a few seconds.
func (r *Drainer) handleTask(ctx context.Context, id string, e Endpoint, msg natsjs.Msg, adm Admission, finished func()) {
	meta, err := msg.Metadata()
	if err != nil {
		finished()
		adm.Release()
		return
	}
	h := msg.Headers()
	r.took(id, h.Get(jetstream.HdrEventKey))
	held := r.hold(msg)
	e.Offer(ctx, msg, meta, adm, func(ok bool) {
		defer finished()
		r.release(held)
		var err error
		if ok {
			err = msg.Ack()
		} else {
			err = msg.NakWithDelay(2*time.Second + backoff.Jitter(3*time.Second))
		}
		if err != nil {
			r.log.Debug("settle task", "endpoint", id, "event_id", h.Get(jetstream.HdrEventID), "event_type", h.Get(jetstream.HdrEventType), "err", err)
		}
	})
}

// expire dead-letters a disabled endpoint's tasks that are past
// retry.max_age. Stream order is not age order (a retry or a requeue is
// stored again long after its event was published), so it looks at every
// task, not only up to the first that is still fresh. It reads the stream
// directly, without a consumer, so checking costs the tasks no JetStream
// delivery. It reports whether the endpoint has no task left.
func (r *Drainer) expire(ctx context.Context, id string, e Endpoint) (empty bool) {
	st, err := r.js.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return false
	}
	e = e.Current()
	left := false
	for seq := uint64(1); ctx.Err() == nil; {
		gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		raw, err := st.GetMsg(gctx, seq, natsjs.WithGetMsgSubject(jetstream.TasksPrefix+id))
		cancel()
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return !left
		}
		if err != nil {
			return false
		}
		seq = raw.Sequence + 1
		fresh, ok := e.Expire(raw)
		if fresh {
			left = true
			continue
		}
		if !ok {
			return false
		}
		if err := st.DeleteMsg(ctx, raw.Sequence); err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
			r.log.Warn("remove expired task", "endpoint", id, "err", err)
			return false
		}
		e.Consumed(raw)
	}
	return false
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
func (r *Drainer) close(ctx context.Context, id string, mine *sync.WaitGroup) bool {
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
				r.left[id] = r.now()
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
func (r *Drainer) inUse() int {
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
func (r *Drainer) evictLeft(ctx context.Context) bool {
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
func (r *Drainer) deleteDrained(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	name := jetstream.DrainConsumerName(id)
	cons, err := r.js.Consumer(ctx, jetstream.TasksStream, name)
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
	if err := r.js.DeleteConsumer(ctx, jetstream.TasksStream, name); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
		r.log.Debug("delete drain consumer", "endpoint", id, "err", err)
		return false
	}
	return true
}

// dropIfEmpty deletes id's drain consumer when its subject holds no task
// at all (none waiting, none in another process's hands), so drains stay
// short-lived; otherwise the consumer's inactivity threshold removes it.
func (r *Drainer) dropIfEmpty(ctx context.Context, id string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := r.js.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return false
	}
	info, err := st.Info(ctx, natsjs.WithSubjectFilter(jetstream.TasksPrefix+id))
	// With a subject filter, State.Msgs is still the whole stream's count:
	// the subject's own is in State.Subjects.
	if err != nil || info.State.Subjects[jetstream.TasksPrefix+id] > 0 {
		return false
	}
	if err := r.js.DeleteConsumer(ctx, jetstream.TasksStream, jetstream.DrainConsumerName(id)); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
		r.log.Debug("delete drain consumer", "endpoint", id, "err", err)
	}
	return true
}

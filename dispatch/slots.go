package dispatch

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// slots is an endpoint's in-flight cap: a counting semaphore whose limit can
// change while slots are taken (a reload), so a changed endpoint never has
// more than its new limit in flight. It costs no goroutine or timer while
// nobody waits. Waiters are served in order (drains first): a released
// slot is handed to the first, so a wait is as long as the queue ahead of
// it, not a draw among every waiter woken at once.
type slots struct {
	mu    sync.Mutex
	n     int
	limit int
	queue []*slotWaiter // drains first, then fan-out deliveries, each in arrival order
	// share is the process's worker pool, divided between the endpoints
	// with requests in flight; nil: no share applies (tests).
	share *poolShare
	// waiting counts fan-out deliveries waiting for a slot (bounded).
	waiting atomic.Int32
	// drainWaits counts drains waiting for a slot: while one waits, a
	// freed slot goes to it, not to a new fan-out delivery, so an
	// endpoint's parked backlog is not starved by its fresh traffic.
	drainWaits int
	// since is when the endpoint last released a slot, or took one with
	// none taken (the start of a busy spell), whichever is later (unix
	// ns); gap is the moving average of the time from since to a release
	// (ns; 0 until the first): how often it frees a slot while busy, idle
	// time left out. soonFree reads both.
	since atomic.Int64
	gap   atomic.Int64
}

// slotWaiter is one wait in slots.queue: ch is closed when a slot is handed
// to it (granted).
type slotWaiter struct {
	ch      chan struct{}
	first   bool
	granted bool
}

// gapWeight is the weight of the newest interval in slots.gap: about the
// last 16 releases count.
const gapWeight = 16

// poolShare divides worker.concurrency between the endpoints that have
// requests in flight, so that slow endpoints cannot take every worker: an
// endpoint holding n requests may take another while n < total/(active+1),
// where active counts the endpoints holding at least one. The "+1" keeps
// room for an endpoint that holds none, which may always take its first.
//
// With lazy set, the share applies only while at least half the pool is
// taken: below that nobody waits for a worker, and holding an endpoint to
// its share would park deliveries for nothing. What is taken is counted in
// endpoint slots, as each is taken, not in workers: a worker is taken only
// after the slot, so many endpoints admitted at once all saw the pool below
// half and together took all of it, leaving a healthy endpoint's deliveries
// to be parked behind slow ones.
type poolShare struct {
	total  int
	active atomic.Int64 // endpoints holding at least one slot
	taken  atomic.Int64 // slots held, all endpoints
	lazy   bool
}

// allows reports whether an endpoint that holds n slots may take one more.
func (p *poolShare) allows(n int) bool {
	if p == nil || n == 0 {
		return true
	}
	if p.lazy && 2*p.taken.Load() < int64(p.total) {
		return true
	}
	return n < max(1, p.total/int(p.active.Load()+1))
}

// took and gave keep active and taken up to date; called with s.mu held.
func (s *slots) took() {
	s.n++
	if s.n == 1 {
		s.since.Store(time.Now().UnixNano())
	}
	if s.share == nil {
		return
	}
	s.share.taken.Add(1)
	if s.n == 1 {
		s.share.active.Add(1)
	}
}

func (s *slots) gave() {
	s.n--
	if s.share == nil {
		return
	}
	s.share.taken.Add(-1)
	if s.n == 0 {
		s.share.active.Add(-1)
	}
}

func (s *slots) setLimit(n int) {
	s.mu.Lock()
	s.limit = max(1, n)
	s.mu.Unlock()
}

func (s *slots) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= s.limit || !s.share.allows(s.n) || s.drainWaits > 0 || len(s.queue) > 0 {
		return false
	}
	s.took()
	return true
}

// acquire waits up to wait (forever when wait is 0) for a slot, after any
// drain that waits too.
func (s *slots) acquire(ctx context.Context, wait time.Duration) bool {
	return s.wait(ctx, wait, false)
}

// acquireFirst is acquire for a drain: it goes before fan-out deliveries.
func (s *slots) acquireFirst(ctx context.Context, wait time.Duration) bool {
	s.mu.Lock()
	s.drainWaits++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.drainWaits--
		s.mu.Unlock()
	}()
	return s.wait(ctx, wait, true)
}

func (s *slots) wait(ctx context.Context, wait time.Duration, first bool) bool {
	s.mu.Lock()
	if s.n < s.limit && s.share.allows(s.n) && (first || s.drainWaits == 0) && (len(s.queue) == 0 || first && !s.queue[0].first) {
		s.took()
		s.mu.Unlock()
		return true
	}
	w := &slotWaiter{ch: make(chan struct{}), first: first}
	at := len(s.queue)
	if first {
		at = 0
		for at < len(s.queue) && s.queue[at].first {
			at++
		}
	}
	s.queue = slices.Insert(s.queue, at, w)
	s.mu.Unlock()
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.ch:
		return true
	case <-timeout:
	case <-ctx.Done():
	}
	s.mu.Lock()
	if w.granted {
		// Handed a slot as the wait ended: pass it on.
		s.mu.Unlock()
		s.release()
		return false
	}
	if i := slices.Index(s.queue, w); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
	}
	s.mu.Unlock()
	return false
}

// release gives a slot back: to the first waiter, when there is one and
// the (possibly lowered) limit allows the slot to stay taken.
func (s *slots) release() {
	s.mu.Lock()
	now := time.Now().UnixNano()
	if since := s.since.Load(); since > 0 {
		dt := max(1, now-since)
		if g := s.gap.Load(); g > 0 {
			s.gap.Store(g + (dt-g)/gapWeight)
		} else {
			s.gap.Store(dt)
		}
	}
	s.since.Store(now)
	if len(s.queue) > 0 && s.n <= s.limit {
		w := s.queue[0]
		s.queue = slices.Delete(s.queue, 0, 1)
		w.granted = true
		close(w.ch)
	} else {
		s.gave()
	}
	s.mu.Unlock()
}

// soonFree reports whether n deliveries waiting for one of limit slots can
// all expect one within d, at the rate the endpoint has been freeing them
// while busy. The time since its last release, shared by its limit slots,
// counts as the gap when it is longer: an endpoint that has just turned
// slow, or whose first requests are still out, is as slow as it has shown
// itself so far. (Shared, because slots are often freed together: a group
// commit of the ledger settles several deliveries at once.)
func (s *slots) soonFree(n, limit int, d time.Duration) bool {
	g := s.gap.Load()
	if since := s.since.Load(); since > 0 {
		g = max(g, (time.Now().UnixNano()-since)/int64(max(1, limit)))
	}
	return int64(n)*max(g, 1) <= int64(d)
}

func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

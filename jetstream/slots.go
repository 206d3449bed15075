package jetstream

import (
	"context"
	"sync"
	"time"
)

// slots is an endpoint's in-flight cap: a counting semaphore whose limit can
// change while slots are taken (a reload), so a changed endpoint never has
// more than its new limit in flight. It costs no goroutine or timer while
// nobody waits.
type slots struct {
	mu    sync.Mutex
	n     int
	limit int
	freed chan struct{} // closed and replaced on every release; nil until someone waits
}

func (s *slots) setLimit(n int) {
	s.mu.Lock()
	s.limit = max(1, n)
	s.mu.Unlock()
}

func (s *slots) tryAcquire() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n >= s.limit {
		return false
	}
	s.n++
	return true
}

// acquire waits up to wait (forever when wait is 0) for a slot.
func (s *slots) acquire(ctx context.Context, wait time.Duration) bool {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	for {
		s.mu.Lock()
		if s.n < s.limit {
			s.n++
			s.mu.Unlock()
			return true
		}
		if s.freed == nil {
			s.freed = make(chan struct{})
		}
		ch := s.freed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-timeout:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (s *slots) release() {
	s.mu.Lock()
	s.n--
	if s.freed != nil {
		close(s.freed)
		s.freed = nil
	}
	s.mu.Unlock()
}

func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

package destination

import (
	"context"
	"sync"
	"time"
)

// DefaultIdle is how long a shared connection stays open without an
// attempt using it, when [NewShared] is given no idle time.
const DefaultIdle = 5 * time.Minute

// Shared holds the connections one destination type shares between its
// endpoints: one per key (the type's address and credentials), dialed on
// the first attempt that needs it, not when an endpoint is opened, and
// closed once no attempt has used it for the idle time. So 10,000 idle
// endpoints on one cluster hold no connection, and busy ones hold one.
//
// A Shared owns no goroutine: a connection's idle timer is a
// [time.AfterFunc]. It is safe for concurrent use.
type Shared[C any] struct {
	idle  time.Duration
	close func(C)

	mu     sync.Mutex
	conns  map[string]*shared[C]
	closed bool
}

// shared is one connection and who uses it.
type shared[C any] struct {
	c       C
	err     error
	ready   chan struct{} // closed once dialed (c or err set)
	refs    int           // leases not released
	gen     uint64        // bumped on every acquire, so a stale timer does nothing
	timer   *time.Timer
	dropped bool // discarded or expired: no longer in conns
	closed  bool // its connection was handed to close
}

// NewShared returns a Shared whose connections are closed with close once
// idle for idle (0 means [DefaultIdle]).
func NewShared[C any](idle time.Duration, close func(C)) *Shared[C] {
	if idle <= 0 {
		idle = DefaultIdle
	}
	return &Shared[C]{idle: idle, close: close, conns: map[string]*shared[C]{}}
}

// Lease is the use of a shared connection by one attempt (or one endpoint's
// channel): [Lease.Release] ends it.
type Lease[C any] struct {
	s   *Shared[C]
	key string
	e   *shared[C]
}

// Conn is the leased connection.
func (l *Lease[C]) Conn() C { return l.e.c }

// Release ends the lease; the connection's idle time starts when its last
// lease ends.
func (l *Lease[C]) Release() { l.s.release(l.e) }

// Discard says that the connection is broken: the next [Shared.Acquire] of
// its key dials a new one, and this one is closed once its last lease ends.
// It does not release the lease.
func (l *Lease[C]) Discard() {
	l.s.mu.Lock()
	defer l.s.mu.Unlock()
	if !l.e.dropped {
		l.e.dropped = true
		if l.s.conns[l.key] == l.e {
			delete(l.s.conns, l.key)
		}
	}
}

// Acquire leases the connection of key, dialing it with dial when there is
// none (concurrent acquirers of a key being dialed wait for that dial, as
// long as ctx allows). A failed dial is returned to each of its waiters and
// tried again by the next Acquire.
func (s *Shared[C]) Acquire(ctx context.Context, key string, dial func(context.Context) (C, error)) (*Lease[C], error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	e := s.conns[key]
	mine := e == nil
	if mine {
		e = &shared[C]{ready: make(chan struct{})}
		s.conns[key] = e
	}
	e.refs++
	e.gen++
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	s.mu.Unlock()
	if mine {
		c, err := dial(ctx)
		s.mu.Lock()
		e.c, e.err = c, err
		if err != nil && !e.dropped {
			e.dropped = true
			if s.conns[key] == e {
				delete(s.conns, key)
			}
		}
		close(e.ready)
		s.mu.Unlock()
	} else {
		select {
		case <-e.ready:
		case <-ctx.Done():
			s.release(e)
			return nil, ctx.Err()
		}
	}
	if e.err != nil {
		s.release(e)
		return nil, e.err
	}
	return &Lease[C]{s: s, key: key, e: e}, nil
}

// release ends one lease of e.
func (s *Shared[C]) release(e *shared[C]) {
	s.mu.Lock()
	e.refs--
	if e.refs > 0 {
		s.mu.Unlock()
		return
	}
	if e.dropped || s.closed {
		done := s.take(e)
		s.mu.Unlock()
		s.closeAll(done)
		return
	}
	gen := e.gen
	e.timer = time.AfterFunc(s.idle, func() { s.expire(e, gen) })
	s.mu.Unlock()
}

// expire closes e if nothing used it since generation gen.
func (s *Shared[C]) expire(e *shared[C], gen uint64) {
	s.mu.Lock()
	if e.refs > 0 || e.gen != gen || e.dropped {
		s.mu.Unlock()
		return
	}
	e.dropped = true
	for k, v := range s.conns {
		if v == e {
			delete(s.conns, k)
			break
		}
	}
	done := s.take(e)
	s.mu.Unlock()
	s.closeAll(done)
}

// take marks e closed and returns its connection to close (outside the
// lock), unless it is in use, failed, still dialing or already closed.
func (s *Shared[C]) take(e *shared[C]) []C {
	if e.refs > 0 || e.closed || e.err != nil {
		return nil
	}
	select {
	case <-e.ready:
	default:
		return nil // still dialing: its dialer's release closes it
	}
	e.closed = true
	return []C{e.c}
}

func (s *Shared[C]) closeAll(cs []C) {
	if s.close == nil {
		return
	}
	for _, c := range cs {
		s.close(c)
	}
}

// Len returns how many connections are open or being dialed.
func (s *Shared[C]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// Close closes every idle connection, and those in use once their leases
// end; Acquire fails with [ErrClosed] from then on.
func (s *Shared[C]) Close() {
	s.mu.Lock()
	s.closed = true
	var done []C
	for k, e := range s.conns {
		delete(s.conns, k)
		e.dropped = true
		if e.timer != nil {
			e.timer.Stop()
		}
		done = append(done, s.take(e)...)
	}
	s.mu.Unlock()
	s.closeAll(done)
}

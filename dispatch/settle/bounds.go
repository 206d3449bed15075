package settle

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// Waiting deliveries are bounded twice: streams.tasks_max_bytes caps
// HOOKJET_TASKS (whose own limit sits above it, so the server, which
// drops the oldest messages of a stream that allows schedules, never gets
// to drop a task), and each endpoint's max_backlog caps its waiting
// deliveries. A delivery that would pass either is dead-lettered with
// reason overflow at once: every delivery an endpoint was owed is
// delivered, waiting, or in the DLQ.
//
// The stream's bytes are read from the server every housekeeping tick
// (Space.Read) and what this process stores in between is added; an
// endpoint's backlog is this process's count of the tasks it stored and not
// yet consumed, raised to the server's count of its parked tasks at every
// rescan.

// taskOverhead is what a task costs in the stream besides its payload:
// subject, headers and the store's record framing, generously.
const taskOverhead = 1024

// EndpointShare is the part of streams.tasks_max_bytes one endpoint's
// waiting deliveries may take: a dead endpoint that matches everything
// fills at most half, and the others still park what they must.
const EndpointShare = 2

// BusyCause reports whether a delivery parked for cause waits only because
// its endpoint is busy (its in-flight cap, the worker pool, a timeout too
// long for the fan-out, NATS redeliveries), not because it fails, is
// disabled or rate-limited: such a delivery never counts toward the
// endpoint's max_backlog or its share of streams.tasks_max_bytes, so an
// endpoint that keeps answering 2xx is never dead-lettered as overflow by
// its own burst.
func BusyCause(cause string) bool {
	switch cause {
	case "in_flight", "concurrency", "slow", "redelivered":
		return true
	}
	return false
}

// TaskSize is what a task of a payload of n bytes takes in HOOKJET_TASKS.
func TaskSize(n int) int64 { return int64(n) + taskOverhead }

// Space is HOOKJET_TASKS as settlement bounds it: this process's count of
// its bytes against streams.tasks_max_bytes, and its MaxAge.
type Space struct {
	used TaskBytes
	max  int64 // streams.tasks_max_bytes
	// age is its MaxAge as last read or raised (Cover): 0 not read yet,
	// negative unlimited.
	age atomic.Int64
}

// NewSpace bounds HOOKJET_TASKS at max bytes (streams.tasks_max_bytes).
func NewSpace(max int64) *Space { return &Space{max: max} }

// Max is streams.tasks_max_bytes.
func (s *Space) Max() int64 { return s.max }

// Read reads the stream's bytes from the server.
func (s *Space) Read(ctx context.Context, js natsjs.JetStream) error { return s.used.Read(ctx, js) }

// Cover makes sure HOOKJET_TASKS keeps ep's tasks until hookjet expires
// them: an endpoint of the admin API (or of another process's file) may
// have a longer retry.max_age than this process's config, from which the
// stream's MaxAge was set at start. The stream's age is only ever raised,
// and only read once.
func (s *Space) Cover(ctx context.Context, js natsjs.JetStream, ep *config.Endpoint, log *slog.Logger) {
	need := jetstream.TaskAge(ep.Settings)
	if cur := time.Duration(s.age.Load()); cur < 0 || cur >= need {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	got, raised, err := jetstream.RaiseTasksMaxAge(ctx, js, need)
	if err != nil {
		log.Warn("HOOKJET_TASKS may drop this endpoint's waiting deliveries before retry.max_age", "endpoint", ep.ID, "retry.max_age", ep.Retry.MaxAge, "err", err)
		return
	}
	if got == 0 {
		got = -1
	}
	if got > time.Duration(s.age.Load()) || got < 0 {
		s.age.Store(int64(got))
	}
	if raised {
		log.Log(ctx, slog.LevelInfo, "HOOKJET_TASKS keeps waiting deliveries longer for this endpoint's retry.max_age", "endpoint", ep.ID, "retry.max_age", ep.Retry.MaxAge, "max_age", got)
	}
}

// reserve takes room for dl's task in its endpoint's max_backlog, its
// share of streams.tasks_max_bytes and streams.tasks_max_bytes, or
// dead-letters dl with reason overflow when one is reached (and reports
// false). A busy task (see BusyCause) takes room in streams.tasks_max_bytes
// only. A reservation that is not stored after all is given back with
// unreserve.
func (t *Stage) reserve(dl *Delivery, busy bool) bool {
	var why string
	size := TaskSize(len(dl.Data))
	limit := dl.Config.MaxBacklog
	e, sp := dl.Endpoint, t.space
	if busy {
		e.Busy.Add(1)
		if sp.used.Reserve(size, sp.max) {
			return true
		}
		e.Consumed(size, true)
		return t.Overflow(dl, fmt.Sprintf("HOOKJET_TASKS reached streams.tasks_max_bytes (%d bytes)", sp.max))
	}
	n := e.Backlog.Add(1)
	if n == 1 {
		e.Waiting.join(e)
	}
	b := e.BacklogBytes.Add(size)
	switch {
	case limit > 0 && n > int64(limit):
		why = fmt.Sprintf("the endpoint's backlog reached max_backlog (%d waiting deliveries)", limit)
	case b > sp.max/EndpointShare:
		why = fmt.Sprintf("the endpoint's waiting deliveries reached 1/%d of streams.tasks_max_bytes (%d bytes)", EndpointShare, sp.max/EndpointShare)
	default:
		if sp.used.Reserve(size, sp.max) {
			return true
		}
		why = fmt.Sprintf("HOOKJET_TASKS reached streams.tasks_max_bytes (%d bytes)", sp.max)
	}
	e.Consumed(size, false)
	return t.Overflow(dl, why)
}

// Overflow dead-letters dl with reason overflow, because of why; it
// reports false, what a refused reservation returns.
func (t *Stage) Overflow(dl *Delivery, why string) bool {
	if dl.State.Error != "" {
		why += "; last error: " + dl.State.Error
	}
	dl.State.Error = why
	t.DeadLetter(dl, "overflow")
	return false
}

// unreserve gives back what reserve(dl, busy) took.
func (t *Stage) unreserve(dl *Delivery, busy bool) {
	size := TaskSize(len(dl.Data))
	dl.Endpoint.Consumed(size, busy)
	t.space.used.Release(size)
}

// stored counts dl's reserved task as stored: the server holds it now.
func (t *Stage) stored(dl *Delivery) {
	t.space.used.Stored(TaskSize(len(dl.Data)))
}

// Consumed counts one of e's tasks, of size bytes, taken off the stream
// (delivered, dead-lettered, rescheduled or expired); busy: a busy task
// (see BusyCause), counted apart.
func (e *Endpoint) Consumed(size int64, busy bool) {
	// Tasks stored before a restart or by another process were never
	// counted here: the counts stop at zero.
	if busy {
		if e.Busy.Add(-1) < 0 {
			e.Busy.Store(0)
		}
		return
	}
	if e.Backlog.Add(-1) < 0 {
		e.Backlog.Store(0)
	}
	if e.BacklogBytes.Add(-size) < 0 {
		e.BacklogBytes.Store(0)
	}
}

// Requeued counts a task of size bytes stored again as a new message (busy:
// a busy one); settling the old one counts that one consumed.
func (e *Endpoint) Requeued(size int64, busy bool) {
	if busy {
		e.Busy.Add(1)
		return
	}
	if e.Backlog.Add(1) == 1 {
		e.Waiting.join(e)
	}
	e.BacklogBytes.Add(size)
}

// Found raises e's backlog to the server's count of its tasks, n: those
// stored before a restart or by another process count toward max_backlog
// too; the busy ones this process knows of do not.
func (e *Endpoint) Found(n uint64) {
	if cur, n := e.Backlog.Load(), int64(n)-e.Busy.Load(); n > cur && e.Backlog.CompareAndSwap(cur, n) {
		e.Waiting.join(e)
	}
}

// Backlogged is the set of endpoints whose Backlog may be above zero: a
// look at every endpoint's backlog (the gauges, every few seconds) then
// costs per endpoint with waiting deliveries, not per endpoint in force.
// An endpoint joins when its Backlog rises from zero and leaves when a
// look finds it at zero. The zero value is an empty set.
type Backlogged struct{ m sync.Map } // id -> *Endpoint

// join adds e; a nil set keeps nothing.
func (b *Backlogged) join(e *Endpoint) {
	if b != nil {
		b.m.Store(e.ID, e)
	}
}

// Each calls fn with each endpoint of the set in force whose Backlog is
// above zero, and drops those at zero and those removed. An endpoint whose
// Backlog rises while it is dropped is added back, by this look or by the
// rise.
func (b *Backlogged) Each(fn func(e *Endpoint, n int64)) {
	b.m.Range(func(id, v any) bool {
		e := v.(*Endpoint)
		if e.Removed.Load() {
			b.m.CompareAndDelete(id, e)
			return true
		}
		if n := e.Backlog.Load(); n > 0 {
			fn(e, n)
			return true
		}
		b.m.CompareAndDelete(id, e)
		if n := e.Backlog.Load(); n > 0 {
			b.m.Store(id, e)
			fn(e, n)
		}
		return true
	})
}

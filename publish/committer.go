package publish

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/hookjet/hookjet/catalog"
)

// Store stores events in HOOKJET_EVENTS (package jetstream's
// EventPublisher).
type Store interface {
	// Store stores events, at most [MaxBatch], with as few synced writes as
	// the stream allows (one per atomic batch), and returns one Result per
	// event, in order, once each is stored, found a duplicate or failed.
	// The ids of events are distinct.
	Store(ctx context.Context, events []Event) []Result
}

// Ledger remembers the ids of stored events past the stream's duplicate
// window (package dedupe's Ledger: the fan-out records every id it takes,
// and every process's ids arrive through HOOKJET_SEEN). Both calls are
// local reads and queued writes, no JetStream round trip.
type Ledger interface {
	// Seen returns the sequence eventID was first stored under, when it
	// is remembered.
	Seen(eventID string) (seq uint64, found bool, err error)
	// FirstSeen records eventID as stored under seq, unless it is
	// remembered already.
	FirstSeen(eventID string, seq uint64) (first uint64, dup bool, err error)
}

// WithLedger makes the committer answer an id that l remembers as a
// duplicate of its first copy in stream, without storing it again (the
// stream's duplicate window forgets ids after minutes; the fan-out would
// drop the copy), and record every event it stores in l.
func WithLedger(l Ledger, stream string) Option {
	return func(c *Committer) { c.ledger, c.stream = l, stream }
}

// Option configures a [Committer].
type Option func(*Committer)

// WithQueue bounds the events waiting to be stored (default 20,000): a
// request that would exceed it fails with [ErrBusy].
func WithQueue(n int) Option { return func(c *Committer) { c.maxQueued = max(n, MaxBatch) } }

// WithWriters sets how many batches are stored at once (default 1: on one
// disk, concurrent batches measured slower than one after the other).
func WithWriters(n int) Option { return func(c *Committer) { c.writers = max(n, 1) } }

// WithLogger sets the logger of failed batches (never payloads).
func WithLogger(l *slog.Logger) Option { return func(c *Committer) { c.log = l } }

// WithStoreTimeout bounds how long one batch may take to store (default
// 10s); a batch that takes longer fails with [ErrUnavailable].
func WithStoreTimeout(d time.Duration) Option { return func(c *Committer) { c.timeout = d } }

// Committer collects the events of concurrent requests into atomic
// batches (group commit). Its writers are goroutines it owns: Close stops
// taking requests, stores what is queued and waits for them.
type Committer struct {
	store     Store
	maxQueued int
	writers   int
	timeout   time.Duration
	log       *slog.Logger
	maxData   int // an event's largest payload; 0: no bound
	ledger    Ledger
	stream    string        // where the ledger's sequences are
	catalog   *catalog.Live // nil: nothing checked (WithCatalog)

	linger  time.Duration // the longest a writer waits for stragglers
	mu      sync.Mutex
	queue   []*request // waiting, in arrival order
	queued  int        // events in queue
	closed  bool
	last    int           // requests in the last batch taken
	took    time.Duration // how long the last batch took to store
	wake    chan struct{} // a token when queue is not empty
	arrived chan struct{} // a token when a request arrived
	stopped sync.WaitGroup
}

// request is one caller's events and, once done is closed, their results.
type request struct {
	events  []Event
	results []Result
	done    chan struct{}
}

// New returns a running committer that stores through s.
func New(s Store, opts ...Option) *Committer {
	c := &Committer{store: s, maxQueued: 20000, writers: 1, timeout: 10 * time.Second, linger: 2 * time.Millisecond,
		log: slog.New(slog.DiscardHandler), wake: make(chan struct{}, 1), arrived: make(chan struct{}, 1)}
	for _, o := range opts {
		o(c)
	}
	for range c.writers {
		c.stopped.Add(1)
		go c.write()
	}
	return c
}

// Publish stores events (1 to [MaxBatch], each with an id) together with
// those of concurrent callers and returns their results once stored: a
// Result per event, in order. It fails with [ErrBusy] when the queue is
// full, [ErrClosed] after Close, or ctx's error when ctx ends first (the
// events may still be stored: publish them again with the same ids).
func (c *Committer) Publish(ctx context.Context, events []Event) ([]Result, error) {
	if len(events) == 0 || len(events) > MaxBatch {
		return nil, fmt.Errorf("publish: %d events: want 1 to %d", len(events), MaxBatch)
	}
	r := &request{events: events, done: make(chan struct{})}
	c.mu.Lock()
	switch {
	case c.closed:
		c.mu.Unlock()
		return nil, ErrClosed
	case c.queued+len(events) > c.maxQueued:
		c.mu.Unlock()
		return nil, ErrBusy
	}
	c.queue = append(c.queue, r)
	c.queued += len(events)
	c.mu.Unlock()
	c.signal()
	select {
	case c.arrived <- struct{}{}:
	default:
	}
	select {
	case <-r.done:
		return r.results, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// signal wakes one writer.
func (c *Committer) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Close stops taking requests, waits (until ctx ends) for the queued ones
// to be stored and for the writers to return. Safe to call more than once.
func (c *Committer) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
	done := make(chan struct{})
	go func() { c.stopped.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("publish: queued events not stored before the deadline: %w", ctx.Err())
	}
}

// write is a writer: it takes the next batch, stores it and answers its
// requests, until the committer is closed and the queue empty.
func (c *Committer) write() {
	defer c.stopped.Done()
	for {
		c.gather()
		batch, ok := c.next()
		if !ok {
			return
		}
		if len(batch) == 0 {
			<-c.wake
			continue
		}
		c.commit(batch)
	}
}

// gather waits, when the last batch held several requests, until as many
// are queued again or for a while at most (linger, or longer after a slow
// batch): the callers answered by the
// last batch send their next requests a moment apart, and a batch costs
// the server about the same whatever its size (a staging store of its
// own). A lone caller's request goes at once.
func (c *Committer) gather() {
	c.mu.Lock()
	want, have, closed, took := c.last, len(c.queue), c.closed, c.took
	c.mu.Unlock()
	if want <= 1 || have == 0 || have >= want || closed {
		return
	}
	// A tenth of what the last batch took, within [linger, 5*linger]:
	// waiting costs little beside a batch that took long, and a caller
	// that misses the batch waits for a whole next one.
	wait := min(max(c.linger, took/10), 5*c.linger)
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		select {
		case <-timer.C:
			return
		case <-c.arrived:
		}
		c.mu.Lock()
		have, n := len(c.queue), c.queued
		c.mu.Unlock()
		if have >= want || n >= MaxBatch {
			return
		}
	}
}

// next takes whole requests from the queue, up to MaxBatch events, and
// wakes another writer if some are left. ok is false once closed and empty.
func (c *Committer) next() (batch []*request, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	i := 0
	for ; i < len(c.queue) && n+len(c.queue[i].events) <= MaxBatch; i++ {
		n += len(c.queue[i].events)
	}
	batch = c.queue[:i:i]
	c.queue = c.queue[i:]
	c.queued -= n
	if i > 0 {
		c.last = i
	}
	if len(c.queue) > 0 || c.closed {
		c.signal() // another writer takes the rest, or sees the end
	}
	return batch, len(batch) > 0 || !c.closed
}

// commit stores the events of batch's requests in one call to the store
// and answers each request. An id that appears more than once in the batch
// is stored once; its later copies are duplicates of the first. An id the
// ledger remembers is not stored: it is a duplicate of the copy stored
// first.
func (c *Committer) commit(batch []*request) {
	var events []Event
	type ref struct{ req, ev, first int } // first: index in events, or -1-index, or remembered
	const remembered = math.MinInt
	var refs []ref
	firstOf := map[string]int{}
	var known map[string]uint64 // ids the ledger remembers → first sequence
	for ri, r := range batch {
		r.results = make([]Result, len(r.events))
		for ei, e := range r.events {
			if _, ok := known[e.ID]; ok {
				refs = append(refs, ref{ri, ei, remembered})
				continue
			}
			if j, dup := firstOf[e.ID]; dup {
				refs = append(refs, ref{ri, ei, -1 - j})
				continue
			}
			if seq, ok := c.remembered(e.ID); ok {
				if known == nil {
					known = map[string]uint64{}
				}
				known[e.ID] = seq
				refs = append(refs, ref{ri, ei, remembered})
				continue
			}
			firstOf[e.ID] = len(events)
			refs = append(refs, ref{ri, ei, len(events)})
			events = append(events, e)
		}
	}
	var results []Result
	if len(events) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
		t0 := time.Now()
		results = c.store.Store(ctx, events)
		took := time.Since(t0)
		cancel()
		c.mu.Lock()
		c.took = took
		c.mu.Unlock()
		c.remember(events, results)
	}
	failed := 0
	for _, f := range refs {
		switch {
		case f.first == remembered:
			id := batch[f.req].events[f.ev].ID
			batch[f.req].results[f.ev] = Result{Stream: c.stream, Seq: known[id], Duplicate: true}
		case f.first >= 0:
			batch[f.req].results[f.ev] = results[f.first]
			if results[f.first].Err != nil {
				failed++
			}
		default:
			res := results[-1-f.first]
			if res.Err == nil {
				res.Duplicate = true
			}
			batch[f.req].results[f.ev] = res
		}
	}
	if failed > 0 {
		c.log.Warn("publish: events not stored", "failed", failed, "of", len(events), "err", firstErr(results))
	}
	for _, r := range batch {
		close(r.done)
	}
}

// remembered returns the sequence the ledger remembers id under.
func (c *Committer) remembered(id string) (uint64, bool) {
	if c.ledger == nil {
		return 0, false
	}
	seq, found, err := c.ledger.Seen(id)
	if err != nil {
		c.log.Warn("publish: ledger lookup", "event_id", id, "err", err)
		return 0, false
	}
	return seq, found
}

// remember records the events stored in the ledger under their sequence
// (for a copy the stream found a duplicate: the first copy's), so that a copy sent after the duplicate window is answered as a
// duplicate even before the fan-out has taken the first.
func (c *Committer) remember(events []Event, results []Result) {
	if c.ledger == nil {
		return
	}
	for i, r := range results {
		if r.Err != nil || r.Stream != c.stream {
			continue
		}
		if _, _, err := c.ledger.FirstSeen(events[i].ID, r.Seq); err != nil {
			c.log.Warn("publish: ledger record", "event_id", events[i].ID, "err", err)
		}
	}
}

// firstErr is the first error among results.
func firstErr(results []Result) error {
	for _, r := range results {
		if r.Err != nil {
			return r.Err
		}
	}
	return nil
}

// WithMaxPayload bounds an event's payload (security.max_payload_bytes);
// 0 (the default): no bound of its own.
func WithMaxPayload(n int) Option { return func(c *Committer) { c.maxData = n } }

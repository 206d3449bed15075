package dedupe

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	// DefaultBatchSize and DefaultBatchDelay are the batcher's defaults.
	DefaultBatchSize  = 1000
	DefaultBatchDelay = 5 * time.Millisecond

	// sweepInterval is how often Run looks for expired entries.
	sweepInterval = time.Minute
	// defaultSweepChunk bounds the index entries one sweep transaction
	// visits, so the sweep never holds the write lock for long.
	defaultSweepChunk = 10000
	// lockStripes is the number of locks that serialise FirstSeen per id.
	lockStripes = 64
)

// Option configures a Ledger.
type Option func(*Ledger)

// WithClock sets the clock used for entry times and expiry; the default is
// time.Now. Batching delays and the sweep interval use real timers.
func WithClock(now func() time.Time) Option {
	return func(l *Ledger) { l.now = now }
}

// WithBatch sets how many records one transaction holds at most (default
// 1000) and how long the batcher waits for more after the first record
// arrives before committing (default 5ms). Values of zero or below keep the
// default.
func WithBatch(maxSize int, maxDelay time.Duration) Option {
	return func(l *Ledger) {
		if maxSize > 0 {
			l.maxBatch = maxSize
		}
		if maxDelay > 0 {
			l.maxDelay = maxDelay
		}
	}
}

// WithLogger sets the logger for sweep and commit failures and malformed
// entries; the default discards.
func WithLogger(log *slog.Logger) Option {
	return func(l *Ledger) { l.log = log }
}

// stats are counters of a Ledger, read by its tests (export_test.go): they
// show that records are committed in batches.
type stats struct {
	// SeenIDs is the number of event ids stored, approximately: entries
	// past the ttl count until the sweep deletes them.
	SeenIDs int64
	// Deliveries is the number of (endpoint, event id) pairs stored,
	// approximately, like SeenIDs.
	Deliveries int64
	// Queued is the number of records waiting for the batcher.
	Queued int
	// Commits is the number of batch transactions committed since
	// NewLedger (sweeps not included).
	Commits uint64
	// CommitErrors is the number of batch transactions that failed.
	CommitErrors uint64
	// Expired is the number of entries the sweep has deleted since
	// NewLedger.
	Expired uint64
}

// Ledger remembers accepted event ids and successful deliveries for ttl.
// FirstSeen, Delivered and MarkDelivered are safe for concurrent use;
// records are written by Run, which must be running for them to be
// committed (see the package documentation for when a commit is durable).
type Ledger struct {
	db         *bolt.DB
	ttl        time.Duration
	now        func() time.Time
	log        *slog.Logger
	maxBatch   int
	maxDelay   time.Duration
	sweepChunk int

	seed    maphash.Seed
	stripes [lockStripes]sync.Mutex // serialise FirstSeen for one id

	mu               sync.Mutex
	queue            []item
	pendingSeen      map[string]pendingSeen // event id → queued record
	pendingDelivered map[string]int64       // delivered key → queued record's unix nanoseconds
	closed           bool

	wake chan struct{} // the queue became non-empty
	full chan struct{} // the queue reached maxBatch

	seenN, deliveredN     atomic.Int64
	commits, commitErrors atomic.Uint64
	expired               atomic.Uint64

	// Owned by the Run goroutine.
	spare     []item
	sweepMore bool
}

// pendingSeen is a queued FirstSeen record.
type pendingSeen struct {
	seq     uint64
	atNanos int64
}

// item is one queued record.
type item struct {
	kind byte
	key  string // event id, or delivered key
	seq  uint64
	at   time.Time
	done func(error) // MarkDelivered only
	err  error       // set when the record was refused at MarkDelivered
}

// NewLedger returns a ledger keeping entries in db for ttl, creating its
// buckets when missing. It counts the stored entries, which reads every
// page of the ledger's buckets once. The caller keeps db open until Run has
// returned.
func NewLedger(db *bolt.DB, ttl time.Duration, opts ...Option) (*Ledger, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("dedupe: ttl %v, want a positive duration", ttl)
	}
	l := &Ledger{
		db:               db,
		ttl:              ttl,
		now:              time.Now,
		log:              slog.New(slog.DiscardHandler),
		maxBatch:         DefaultBatchSize,
		maxDelay:         DefaultBatchDelay,
		sweepChunk:       defaultSweepChunk,
		seed:             maphash.MakeSeed(),
		pendingSeen:      make(map[string]pendingSeen),
		pendingDelivered: make(map[string]int64),
		wake:             make(chan struct{}, 1),
		full:             make(chan struct{}, 1),
	}
	for _, opt := range opts {
		opt(l)
	}
	err := db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{seenBucket, deliveredBucket, expiryBucket} {
			b, err := tx.CreateBucketIfNotExists(name)
			if err != nil {
				return fmt.Errorf("create bucket %s: %w", name, err)
			}
			switch string(name) {
			case string(seenBucket):
				l.seenN.Store(int64(b.Stats().KeyN))
			case string(deliveredBucket):
				l.deliveredN.Store(int64(b.Stats().KeyN))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("open dedupe ledger: %w", err)
	}
	return l, nil
}

// FirstSeen returns the stream sequence under which eventID was first
// recorded and whether the message at seq is a duplicate: dup is true when
// a different sequence was recorded within the ttl. When no live record
// exists, FirstSeen queues one for seq and returns (seq, false). Concurrent
// calls for one id agree: exactly one of them records its sequence.
//
// The record survives a crash only once the batcher has committed it (within
// WithBatch's delay); after a crash before that, the id is unknown again.
func (l *Ledger) FirstSeen(eventID string, seq uint64) (first uint64, dup bool, err error) {
	if err := checkID("event id", eventID); err != nil {
		return 0, false, err
	}
	stripe := &l.stripes[maphash.String(l.seed, eventID)%lockStripes]
	stripe.Lock()
	defer stripe.Unlock()

	// A queued record is removed only after it has been committed, so a
	// lookup that misses the queue and starts afterwards finds it in the db.
	now := l.now()
	l.mu.Lock()
	closed := l.closed
	pending, ok := l.pendingSeen[eventID]
	l.mu.Unlock()
	if closed {
		return 0, false, ErrClosed
	}
	if ok && l.live(pending.atNanos, now) {
		return pending.seq, pending.seq != seq, nil
	}
	if !ok {
		stored, atNanos, found, err := l.lookupSeen(eventID)
		if err != nil {
			return 0, false, err
		}
		if found && l.live(atNanos, now) {
			return stored, stored != seq, nil
		}
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, false, ErrClosed
	}
	l.pendingSeen[eventID] = pendingSeen{seq: seq, atNanos: now.UnixNano()}
	l.enqueue(item{kind: kindSeen, key: eventID, seq: seq, at: now})
	return seq, false, nil
}

func (l *Ledger) lookupSeen(eventID string) (seq uint64, atNanos int64, found bool, err error) {
	tx, err := l.db.Begin(false)
	if err != nil {
		return 0, 0, false, fmt.Errorf("read dedupe ledger: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	v := tx.Bucket(seenBucket).Get([]byte(eventID))
	if v == nil {
		return 0, 0, false, nil
	}
	seq, atNanos, err = decodeSeen(v)
	if err != nil {
		l.log.Warn("ignoring malformed dedupe entry", "event_id", eventID, "err", err)
		return 0, 0, false, nil
	}
	return seq, atNanos, true, nil
}

// Check reports whether the ledger's state file answers a read: nil, or why
// not (closed, failing). Readiness checks call it.
func (l *Ledger) Check() error {
	if err := l.db.View(func(*bolt.Tx) error { return nil }); err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// Delivered reports whether endpoint has answered 2xx for eventID within
// the ttl: MarkDelivered was called for it, even if its record is still
// queued.
func (l *Ledger) Delivered(endpoint, eventID string) (bool, error) {
	if err := checkID("endpoint", endpoint); err != nil {
		return false, err
	}
	if err := checkID("event id", eventID); err != nil {
		return false, err
	}
	var buf [128]byte
	key := appendDeliveredKey(buf[:0], endpoint, eventID)

	// As in FirstSeen: checking the queue before the db misses nothing.
	now := l.now()
	l.mu.Lock()
	pendingAt, ok := l.pendingDelivered[string(key)]
	l.mu.Unlock()
	if ok {
		return l.live(pendingAt, now), nil
	}

	tx, err := l.db.Begin(false)
	if err != nil {
		return false, fmt.Errorf("read dedupe ledger: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	v := tx.Bucket(deliveredBucket).Get(key)
	if v == nil {
		return false, nil
	}
	atNanos, err := decodeDelivered(v)
	if err != nil {
		l.log.Warn("ignoring malformed dedupe entry", "endpoint", endpoint, "event_id", eventID, "err", err)
		return false, nil
	}
	return l.live(atNanos, now), nil
}

// live reports whether an entry written at atNanos is within the ttl at now.
func (l *Ledger) live(atNanos int64, now time.Time) bool {
	return now.UnixNano()-atNanos < int64(l.ttl)
}

// MarkDelivered records that endpoint answered 2xx for eventID and calls
// done once the batch holding the record has committed (nil) or failed
// (the error). done runs on the batcher goroutine and must be quick, such
// as an Ack call; it must not call MarkDelivered and wait for its done.
// Invalid ids reach done as an error wrapping ErrInvalidID, through the
// batcher as well. After Run has returned, done is called at once, on the
// caller's goroutine, with ErrClosed. A nil done is allowed.
func (l *Ledger) MarkDelivered(endpoint, eventID string, done func(error)) {
	if done == nil {
		done = func(error) {}
	}
	it := item{kind: kindDelivered, done: done, at: l.now()}
	if err := checkID("endpoint", endpoint); err != nil {
		it.err = err
	} else if err := checkID("event id", eventID); err != nil {
		it.err = err
	} else {
		it.key = string(appendDeliveredKey(make([]byte, 0, 8+len(endpoint)+len(eventID)), endpoint, eventID))
	}

	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		done(ErrClosed)
		return
	}
	if it.err == nil {
		l.pendingDelivered[it.key] = it.at.UnixNano()
	}
	l.enqueue(it)
	l.mu.Unlock()
}

// enqueue appends it and wakes the batcher. The caller holds l.mu.
func (l *Ledger) enqueue(it item) {
	l.queue = append(l.queue, it)
	switch len(l.queue) {
	case 1:
		signal(l.wake)
	case l.maxBatch:
		signal(l.full)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// stats returns the ledger's counters.
func (l *Ledger) stats() stats {
	l.mu.Lock()
	queued := len(l.queue)
	l.mu.Unlock()
	return stats{
		SeenIDs:      l.seenN.Load(),
		Deliveries:   l.deliveredN.Load(),
		Queued:       queued,
		Commits:      l.commits.Load(),
		CommitErrors: l.commitErrors.Load(),
		Expired:      l.expired.Load(),
	}
}

// Run is the batcher: it commits queued records in batches and, every
// minute, deletes entries older than the ttl. Call it once, on a goroutine
// the caller owns.
//
// To shut down, cancel ctx: Run stops accepting records (FirstSeen then
// returns ErrClosed and MarkDelivered calls done with ErrClosed), commits
// everything already queued, calls every pending done callback and
// returns. Close the bbolt file only after Run has returned.
func (l *Ledger) Run(ctx context.Context) {
	sweep := time.NewTicker(sweepInterval)
	defer sweep.Stop()
	batchTimer := time.NewTimer(l.maxDelay)
	batchTimer.Stop()
	now := make(chan time.Time)
	close(now)

	for {
		sweepReady := sweep.C
		if l.sweepMore {
			sweepReady = now // more expired entries wait: go on at once
		}
		select {
		case <-ctx.Done():
			l.mu.Lock()
			l.closed = true
			l.mu.Unlock()
			l.commitQueued()
			return
		case <-sweepReady:
			l.sweepMore = l.sweep()
		case <-l.wake:
			l.waitForBatch(ctx, batchTimer)
			l.commitQueued()
		}
	}
}

// waitForBatch waits until the queue holds a full batch, maxDelay has
// passed, or ctx is done.
func (l *Ledger) waitForBatch(ctx context.Context, timer *time.Timer) {
	l.mu.Lock()
	n := len(l.queue)
	l.mu.Unlock()
	if n >= l.maxBatch {
		return
	}
	timer.Reset(l.maxDelay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-l.full:
	case <-ctx.Done():
	}
}

// commitQueued takes everything queued and commits it in transactions of
// at most maxBatch records, calling the callbacks after each.
func (l *Ledger) commitQueued() {
	l.mu.Lock()
	batch := l.queue
	l.queue = l.spare[:0]
	l.mu.Unlock()
	// Drop a stale "full" signal: it belonged to the items taken here.
	select {
	case <-l.full:
	default:
	}

	for start := 0; start < len(batch); start += l.maxBatch {
		l.commit(batch[start:min(start+l.maxBatch, len(batch))])
	}
	clear(batch) // release callbacks and keys
	l.spare = batch[:0]
}

// commit writes one batch in one transaction, then forgets its queued
// records and calls the callbacks.
func (l *Ledger) commit(batch []item) {
	var newSeen, newDelivered int64
	err := l.db.Update(func(tx *bolt.Tx) error {
		newSeen, newDelivered = 0, 0
		seen, delivered, index := tx.Bucket(seenBucket), tx.Bucket(deliveredBucket), tx.Bucket(expiryBucket)
		for i := range batch {
			it := &batch[i]
			if it.err != nil {
				continue
			}
			key := []byte(it.key)
			b, val := seen, []byte(nil)
			if it.kind == kindSeen {
				val = encodeSeen(it.seq, it.at)
			} else {
				b, val = delivered, encodeDelivered(it.at)
			}
			if b.Get(key) == nil {
				if it.kind == kindSeen {
					newSeen++
				} else {
					newDelivered++
				}
			}
			if err := b.Put(key, val); err != nil {
				return fmt.Errorf("put ledger entry: %w", err)
			}
			if err := index.Put(indexKey(it.at.UnixNano(), it.kind, key), []byte{}); err != nil {
				return fmt.Errorf("put ledger index: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		l.commitErrors.Add(1)
		l.log.Error("committing dedupe ledger batch", "records", len(batch), "err", err)
		err = fmt.Errorf("commit dedupe ledger: %w", err)
	} else {
		l.commits.Add(1)
		l.seenN.Add(newSeen)
		l.deliveredN.Add(newDelivered)
	}

	l.mu.Lock()
	for i := range batch {
		it := &batch[i]
		switch {
		case it.err != nil:
		case it.kind == kindSeen:
			if p := l.pendingSeen[it.key]; p.seq == it.seq && p.atNanos == it.at.UnixNano() {
				delete(l.pendingSeen, it.key)
			}
		default:
			if l.pendingDelivered[it.key] == it.at.UnixNano() {
				delete(l.pendingDelivered, it.key)
			}
		}
	}
	l.mu.Unlock()

	for i := range batch {
		it := &batch[i]
		if it.done == nil {
			continue
		}
		if it.err != nil {
			it.done(it.err)
		} else {
			it.done(err)
		}
	}
}

// sweep deletes up to sweepChunk expired index entries, and the entries
// they point to when those have not been written again since, in one
// transaction. It reports whether more expired entries may remain.
func (l *Ledger) sweep() (more bool) {
	cutoff := l.now().Add(-l.ttl).UnixNano()
	var deletedSeen, deletedDelivered int64
	err := l.db.Update(func(tx *bolt.Tx) error {
		more, deletedSeen, deletedDelivered = false, 0, 0
		seen, delivered, index := tx.Bucket(seenBucket), tx.Bucket(deliveredBucket), tx.Bucket(expiryBucket)
		var visited [][]byte
		c := index.Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(visited) == l.sweepChunk {
				more = true
				break
			}
			if len(k) < 10 {
				visited = append(visited, append([]byte(nil), k...)) // malformed: drop
				continue
			}
			atNanos := int64(binary.BigEndian.Uint64(k[:8]))
			if atNanos > cutoff { // live: now-at < ttl
				break
			}
			visited = append(visited, append([]byte(nil), k...))
			kind, key := k[8], k[9:]
			b := seen
			if kind == kindDelivered {
				b = delivered
			}
			v := b.Get(key)
			if v == nil {
				continue
			}
			// An entry written again after this index entry has a newer
			// index entry of its own: keep it.
			if stored, err := decodeAt(kind, v); err == nil && stored != atNanos {
				continue
			}
			if err := b.Delete(key); err != nil {
				return fmt.Errorf("delete expired entry: %w", err)
			}
			if kind == kindSeen {
				deletedSeen++
			} else {
				deletedDelivered++
			}
		}
		for _, k := range visited {
			if err := index.Delete(k); err != nil {
				return fmt.Errorf("delete expiry index entry: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		l.log.Error("sweeping dedupe ledger", "err", err)
		return false
	}
	l.seenN.Add(-deletedSeen)
	l.deliveredN.Add(-deletedDelivered)
	l.expired.Add(uint64(deletedSeen + deletedDelivered))
	return more
}

package webhook

import (
	"context"
	"sync"
	"time"
)

// Deduper defaults, used when NewDeduper is given a non-positive value.
const (
	// DefaultDedupeTTL is how long a Deduper remembers an id by default:
	// hookjet's default dedupe window and retry max_age are both 24h.
	DefaultDedupeTTL = 24 * time.Hour
	// DefaultDedupeEntries is how many ids a Deduper holds by default.
	DefaultDedupeEntries = 100_000
)

// claim outcomes.
type claimState uint8

const (
	claimFirst   claimState = iota // never seen, or forgotten, or expired
	claimDone                      // seen and processed (or claimed by First)
	claimPending                   // claimed by a Handler still processing it
)

// Deduper remembers webhook ids for a TTL so that a duplicate delivery never
// causes a second effect. Memory is bounded: beyond maxEntries ids the oldest
// is forgotten first. The memory is local to the process; receivers running
// several replicas need a shared store for the same guarantee.
//
// Create one with [NewDeduper]; the zero value is not usable. A Deduper is
// safe for concurrent use.
type Deduper struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu   sync.Mutex
	seen map[string]record
	// order holds ids in arrival order, which is also expiry order, as a ring
	// buffer that grows up to max. It may hold stale entries (forgotten or
	// replaced ids); gen tells them apart.
	order []slot
	head  int // index of the oldest slot
	n     int // slots in use
	gen   uint64
}

type record struct {
	expires time.Time
	gen     uint64
	pending bool
}

type slot struct {
	id      string
	expires time.Time
	gen     uint64
}

// NewDeduper returns a Deduper that remembers each id for ttl and at most
// maxEntries ids at once. A non-positive ttl means [DefaultDedupeTTL]; a
// non-positive maxEntries means [DefaultDedupeEntries]. Of the options only
// [WithClock] applies.
func NewDeduper(ttl time.Duration, maxEntries int, opts ...Option) *Deduper {
	if ttl <= 0 {
		ttl = DefaultDedupeTTL
	}
	if maxEntries <= 0 {
		maxEntries = DefaultDedupeEntries
	}
	o := buildOptions(opts)
	return &Deduper{
		ttl:  ttl,
		max:  maxEntries,
		now:  o.now,
		seen: make(map[string]record),
	}
}

// First reports whether id is seen for the first time within the TTL, and
// remembers it. Concurrent calls with the same id return true exactly once.
// If processing the delivery then fails, call [Deduper.Forget] so that the
// sender's retry is processed.
func (d *Deduper) First(id string) bool {
	_, st := d.claim(id, false)
	return st == claimFirst
}

// Forget removes id, so that the next delivery with that id counts as first.
func (d *Deduper) Forget(id string) {
	d.mu.Lock()
	delete(d.seen, id)
	d.mu.Unlock()
}

// Len returns how many ids the Deduper currently remembers, counting ids that
// have expired but not yet been dropped.
func (d *Deduper) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.seen)
}

// claim records id unless it is already known and unexpired. It returns the
// generation of the new record (for settle) and what was found. A pending
// claim marks the id as being processed until settle.
func (d *Deduper) claim(id string, pending bool) (uint64, claimState) {
	now := d.now()
	d.mu.Lock()
	defer d.mu.Unlock()
	d.expire(now)
	if r, ok := d.seen[id]; ok && now.Before(r.expires) {
		if r.pending {
			return 0, claimPending
		}
		return 0, claimDone
	}
	if d.n == d.max {
		d.pop()
	}
	d.gen++
	exp := now.Add(d.ttl)
	d.seen[id] = record{expires: exp, gen: d.gen, pending: pending}
	d.push(slot{id: id, expires: exp, gen: d.gen})
	return d.gen, claimFirst
}

// settle ends a pending claim: processed ids stay remembered, failed ones are
// forgotten so that the sender's retry is processed. A claim that was evicted
// or replaced in the meantime is left alone.
func (d *Deduper) settle(id string, gen uint64, processed bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.seen[id]
	if !ok || r.gen != gen {
		return
	}
	if processed {
		r.pending = false
		d.seen[id] = r
	} else {
		delete(d.seen, id)
	}
}

// expire drops slots whose time has come. Slots are in arrival order, so it
// stops at the first one still live.
func (d *Deduper) expire(now time.Time) {
	for d.n > 0 && !now.Before(d.order[d.head].expires) {
		d.pop()
	}
}

// pop drops the oldest slot, and its id unless the id was re-recorded since.
func (d *Deduper) pop() {
	s := &d.order[d.head]
	if r, ok := d.seen[s.id]; ok && r.gen == s.gen {
		delete(d.seen, s.id)
	}
	*s = slot{} // release the id string
	d.head++
	if d.head == len(d.order) {
		d.head = 0
	}
	d.n--
}

// push appends a slot, growing the ring up to max. The caller makes room
// first when the ring is at max.
func (d *Deduper) push(s slot) {
	if d.n == len(d.order) {
		size := min(max(2*len(d.order), 64), d.max)
		grown := make([]slot, size)
		k := copy(grown, d.order[d.head:])
		copy(grown[k:], d.order[:d.head])
		d.order, d.head = grown, 0
	}
	i := d.head + d.n
	if i >= len(d.order) {
		i -= len(d.order)
	}
	d.order[i] = s
	d.n++
}

// Once implements [Store] in this process's memory: fn runs unless id was
// processed within the TTL; a concurrent call for an id being processed
// returns [ErrInProgress]; a failed fn forgets id so the retry is processed.
func (d *Deduper) Once(ctx context.Context, id string, fn func(ctx context.Context) error) (bool, error) {
	gen, st := d.claim(id, true)
	switch st {
	case claimDone:
		return true, nil
	case claimPending:
		return false, ErrInProgress
	}
	err := fn(ctx)
	d.settle(id, gen, err == nil)
	return false, err
}

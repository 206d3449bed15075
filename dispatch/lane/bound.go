package lane

import (
	"fmt"
	"time"

	"github.com/hookjet/hookjet/jetstream"
)

// Bounding an ordered endpoint's waiting deliveries.
//
// Every keyed delivery of an ordered endpoint waits in HOOKJET_ORDERED, a
// healthy endpoint's burst included. As for tasks (dispatch/settle, bounds.go), an endpoint
// that keeps answering 2xx is never dead-lettered as overflow by its own
// burst, and one that fails cannot fill the lane for the others:
//   - an endpoint that delivered in the last laneProven (its breaker's last
//     success, persisted, so a restart keeps it) counts toward its
//     max_backlog and its share of the lane (half its MaxBytes) only the
//     entries of its failing keys: retrying, held after a dead letter, or
//     kept from going by the endpoint's state (disabled, rate-limited,
//     breaker open), the causes that count for a task too (settle.BusyCause);
//   - any other endpoint (never delivered, or not for a while: dead)
//     counts every entry.
//
// The owner, which reads every entry, keeps both counts per endpoint. A
// delivery that would pass a bound is dead-lettered as overflow instead of
// stored when the owner's fan-out meets it, and by the owner when it reads
// one another process's fan-out stored (only entries stored during its
// term: a backlog read at a takeover was admitted by the term before).
// Like an overflow at a full lane, such a dead letter does not hold its
// key.

// laneProven is how recent an endpoint's last success must be for a
// burst to wait in the lane without counting toward its bounds.
const laneProven = time.Minute

// tally counts each endpoint's entries in the lane toward its bounds, and
// says when one more would pass them. State only, kept under its Owner's
// lock: its own type so that the bounds' arithmetic reads (and tests)
// without the stream.
type tally struct {
	// counts are what each endpoint's entries hold, and began when the
	// term began: entries stored since are bounded.
	counts map[string]laneCounts
	began  time.Time
	// ahead are the entries this process's fan-out is storing or has
	// stored (aheadSeq, by sequence) and the feed has not read yet, per
	// endpoint: they count toward its bounds too.
	ahead    map[string]laneCount
	aheadSeq map[uint64]laneAhead
	// busy, share and shares: Options.Busy, Share and Shares.
	busy   func(cause string) bool
	share  int64
	shares int
}

func newTally(o Options) tally {
	t := tally{busy: o.Busy, share: o.Share, shares: o.Shares}
	t.clear()
	return t
}

// clear forgets every count: the term ended.
func (t *tally) clear() {
	t.counts = map[string]laneCounts{}
	t.ahead, t.aheadSeq = map[string]laneCount{}, map[uint64]laneAhead{}
}

// laneCount is what some entries of an endpoint hold in the lane.
type laneCount struct {
	n     int
	bytes int64
}

func (c *laneCount) add(e *laneEntry, sign int) {
	c.n += sign
	c.bytes += int64(sign) * e.size
}

// failing reports whether a key held for why counts toward its endpoint's
// bounds.
func (t *tally) failing(why string) bool { return why != "" && !t.busy(why) }

// counted reports whether entry e counts toward its endpoint's bounds: a
// hold marker is no delivery, and a replay was asked for by an operator.
func (e *laneEntry) counted() bool { return !e.front }

// add adds sign times e, an entry of a key of endpoint ep held for why, to
// the endpoint's counts.
func (t *tally) add(ep, why string, e *laneEntry, sign int) {
	if e.hold {
		return
	}
	c := t.counts[ep]
	c.deliveries += sign
	if e.counted() {
		c.all.add(e, sign)
		if t.failing(why) {
			c.failing.add(e, sign)
		}
	}
	t.set(ep, c)
}

// fail adds (sign 1) or takes (-1) a key's entries to or from its
// endpoint's failing count: the key started or stopped failing.
func (t *tally) fail(ep string, entries []*laneEntry, sign int) {
	c := t.counts[ep]
	c.failingKeys += sign
	for _, e := range entries {
		if e.counted() {
			c.failing.add(e, sign)
		}
	}
	t.set(ep, c)
}

// set keeps c as endpoint ep's counts, none when it holds nothing.
func (t *tally) set(ep string, c laneCounts) {
	if c.deliveries <= 0 && c.failingKeys <= 0 {
		delete(t.counts, ep)
		return
	}
	t.counts[ep] = c
}

// waiting counts endpoint ep's deliveries waiting (views).
func (t *tally) waiting(ep string) int { return t.counts[ep].deliveries }

// laneCounts are an endpoint's entries in the lane: all, and those of its
// failing keys, and how many keys fail (each may hold a second copy of its
// first entry for a moment, while a retry stores it again: run.go again).
type laneCounts struct {
	all, failing laneCount
	failingKeys  int
	// deliveries counts every entry but hold markers, replays included:
	// what the endpoint's views count as waiting (view.go).
	deliveries int
}

// bounds says why endpoint ep's entries, with n more of size bytes for
// key, pass its max_backlog limit or its share of the lane ("": they do
// not). keyFails: key has entries in the lane and fails; proven(ep): the
// endpoint delivered lately, asked only when the entries pass a bound
// counted in full. Each failing key counts one entry more: the copy a retry
// stores before its first is removed. The entries this process stored and
// the feed has not read yet count as every entry, and as failing ones when
// the key fails.
func (t *tally) bounds(ep string, limit int, keyFails bool, key string, n int, size int64, proven func(ep string) bool) string {
	share := t.share
	c, ahead := t.counts[ep], t.ahead[ep]
	all := laneCount{n: c.all.n + ahead.n + c.failingKeys + n, bytes: c.all.bytes + ahead.bytes + size}
	if (limit <= 0 || all.n <= limit) && all.bytes <= share {
		return "" // within both bounds whatever counts
	}
	count, what := all, ""
	if proven(ep) {
		if !keyFails {
			return ""
		}
		count = laneCount{n: c.failing.n + ahead.n + c.failingKeys + n, bytes: c.failing.bytes + ahead.bytes + size}
		what = fmt.Sprintf(" while ordering key %q fails", key)
	}
	switch {
	case limit > 0 && count.n > limit:
		return fmt.Sprintf("the endpoint's backlog reached max_backlog (%d waiting deliveries)%s", limit, what)
	case count.bytes > share:
		return fmt.Sprintf("the endpoint's waiting ordered deliveries reached 1/%d of %s (%d bytes)%s", t.shares, jetstream.LaneStream, share, what)
	}
	return ""
}

// aheadAdd adds sign times a to its endpoint's entries ahead of the feed.
func (t *tally) aheadAdd(a laneAhead, sign int) {
	c := t.ahead[a.ep]
	c.n += sign
	c.bytes += int64(sign) * a.size
	if c.n <= 0 {
		delete(t.ahead, a.ep)
		return
	}
	t.ahead[a.ep] = c
}

// landed keeps a, stored at seq, ahead until the feed reads it: unless it
// was not stored (seq 0) or the feed has read it already (up to fed).
func (t *tally) landed(a laneAhead, seq, fed uint64) {
	if seq == 0 || seq <= fed {
		t.aheadAdd(a, -1)
		return
	}
	t.aheadSeq[seq] = a
}

// readAhead ends the reservation of the entry at seq, which the feed has
// read.
func (t *tally) readAhead(seq uint64) {
	if a, ok := t.aheadSeq[seq]; ok {
		delete(t.aheadSeq, seq)
		t.aheadAdd(a, -1)
	}
}

// setWhy says why k waits ("": it does not), moving its entries into or out
// of its endpoint's failing count. l.mu is held.
func (l *Owner) setWhy(k *laneKey, why string, since time.Time) {
	if k.why == why {
		return
	}
	was, is := l.tally.failing(k.why), l.tally.failing(why)
	k.why, k.since = why, since
	if was == is {
		return
	}
	sign := -1
	if is {
		sign = 1
	}
	l.tally.fail(k.id.ep, k.entries, sign)
	if is {
		l.trim(k)
	}
}

// trim dead-letters k's newest waiting entries as overflow while its
// endpoint's entries pass its bounds: k has just started to fail, and its
// first entry's retry may need room for a second copy. Only at an endpoint
// that counts every entry (not proven): there every entry was admitted
// within the bounds, so at most one per failing key goes. A proven
// endpoint's entries were admitted while it delivered and stay, as a
// healthy endpoint's busy tasks do (dispatch/settle, bounds.go). The first entry, replays
// and hold markers stay. l.mu is held; the dead letters are stored on the
// term's goroutines.
func (l *Owner) trim(k *laneKey) {
	limit, ok := l.eng.MaxBacklog(k.id.ep)
	if !ok || !l.owner || len(k.entries) < 2 || l.proven(k.id.ep) {
		return
	}
	gen := l.gen
	for i := len(k.entries) - 1; i >= 1; i-- {
		why := l.over(k.id.ep, limit, k, k.id.key, 0, 0)
		if why == "" {
			return
		}
		v := k.entries[i]
		if !v.counted() || v == k.cur {
			continue
		}
		l.unfile(k, v)
		l.wg.Go(func() { l.overflow(gen, k, v, why) })
	}
}

// over says why endpoint ep's entries, with n more of size bytes for key
// (k: its key in the lane, nil when it has none), pass its max_backlog
// limit or its share of the lane ("": they do not). l.mu is held.
func (l *Owner) over(ep string, limit int, k *laneKey, key string, n int, size int64) string {
	return l.tally.bounds(ep, limit, k != nil && l.tally.failing(k.why), key, n, size, l.proven)
}

// proven reports whether endpoint ep delivered within laneProven.
func (l *Owner) proven(ep string) bool {
	last := l.eng.LastSuccess(ep)
	return !last.IsZero() && l.now().Sub(last) < laneProven
}

// laneAhead is an entry this process is storing, counted toward its
// endpoint's bounds until the feed reads it (landed, take).
type laneAhead struct {
	gen  uint64
	ep   string
	size int64
}

// Reserve says why an entry of size bytes for key of endpoint ep (its
// max_backlog limit), which this process's fan-out is about to store (Enqueue), is not
// stored: this
// process owns the lane and it would pass its endpoint's bounds ("": it is
// stored, and counted ahead of the feed until it lands). Another process's
// fan-out stores it, and the owner dead-letters it when it reads it (bound).
func (l *Owner) Reserve(ep string, limit int, key string, size int64) (string, Reservation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.owner {
		return "", laneAhead{}
	}
	if why := l.over(ep, limit, l.keys[laneKeyID{ep, key}], key, 1, size); why != "" {
		return why, laneAhead{}
	}
	a := laneAhead{gen: l.gen, ep: ep, size: size}
	l.tally.aheadAdd(a, 1)
	return "", a
}

// landed ends a's reservation once its entry is stored at seq (0: it was
// not): it counts until the feed reads it, unless it has already.
func (l *Owner) landed(a laneAhead, seq uint64) {
	if a.ep == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if a.gen != l.gen {
		return
	}
	l.tally.landed(a, seq, l.rm.fed)
}

// bound takes entry v, just read into k, out of it again when it was
// stored during this term and passes its endpoint's bounds, and has it
// dead-lettered as overflow; it reports whether it did. l.mu is held.
func (l *Owner) bound(k *laneKey, v *laneEntry, stored time.Time) bool {
	if !v.counted() || stored.Before(l.tally.began) {
		return false
	}
	limit, ok := l.eng.MaxBacklog(k.id.ep)
	if !ok {
		return false
	}
	why := l.over(k.id.ep, limit, k, k.id.key, 1, v.size)
	if why == "" {
		return false
	}
	gen := l.gen
	l.wg.Go(func() { l.overflow(gen, k, v, why) })
	return true
}

// overflow dead-letters v, an entry of k that was never filed, as
// overflow because of why, and has it removed from the stream once its
// dead letter is stored; one whose dead letter could not be stored is
// filed after all.
func (l *Owner) overflow(gen uint64, k *laneKey, v *laneEntry, why string) {
	msg, err := l.entryMsg(l.o.Sends, v)
	if isNotFound(err) {
		return // settled by an earlier term meanwhile
	}
	if err != nil {
		l.refile(gen, k, v)
		return
	}
	l.eng.Overflow(k.id.ep, msg.Msg, why, func(ok bool) {
		if !ok {
			l.refile(gen, k, v)
			return
		}
		l.mu.Lock()
		stale := gen != l.gen
		if !stale {
			l.rm.drop(v.seq)
		}
		l.mu.Unlock()
		if stale {
			l.rn.deleteStale(v.seq, "dead-lettered")
		}
	})
}

// refile files v in its key after all: its dead letter was not stored.
func (l *Owner) refile(gen uint64, k *laneKey, v *laneEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	k = l.key(k.id)
	l.file(k, v)
	l.consider(k)
}

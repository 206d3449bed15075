package lane

import (
	"fmt"
	"time"

	"github.com/hookjet/hookjet/jetstream"
)

// Bounding an ordered endpoint's waiting deliveries.
//
// Every keyed delivery of an ordered endpoint waits in HOOKJET_ORDERED, a
// healthy endpoint's burst included. As for tasks (bounds.go), an endpoint
// that keeps answering 2xx is never dead-lettered as overflow by its own
// burst, and one that fails cannot fill the lane for the others:
//   - an endpoint that delivered in the last laneProven (its breaker's last
//     success, persisted, so a restart keeps it) counts toward its
//     max_backlog and its share of the lane (half its MaxBytes) only the
//     entries of its failing keys: retrying, held after a dead letter, or
//     kept from going by the endpoint's state (disabled, rate-limited,
//     breaker open), the causes that count for a task too (busyCause);
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
func (l *Owner) failing(why string) bool { return why != "" && !l.o.Busy(why) }

// counted reports whether entry e counts toward its endpoint's bounds: a
// hold marker is no delivery, and a replay was asked for by an operator.
func (e *laneEntry) counted() bool { return !e.front }

// tally adds sign times e to its endpoint's counts. l.mu is held.
func (l *Owner) tally(k *laneKey, e *laneEntry, sign int) {
	if e.hold {
		return
	}
	c := l.counts[k.id.ep]
	c.deliveries += sign
	if e.counted() {
		c.all.add(e, sign)
		if l.failing(k.why) {
			c.failing.add(e, sign)
		}
	}
	l.setCounts(k.id.ep, c)
}

// setCounts keeps c as endpoint ep's counts, none when it holds nothing.
// l.mu is held.
func (l *Owner) setCounts(ep string, c laneCounts) {
	if c.deliveries <= 0 && c.failingKeys <= 0 {
		delete(l.counts, ep)
		return
	}
	l.counts[ep] = c
}

// laneCounts are an endpoint's entries in the lane: all, and those of its
// failing keys, and how many keys fail (each may hold a second copy of its
// first entry for a moment, while a retry stores it again: lane_owner.go
// again).
type laneCounts struct {
	all, failing laneCount
	failingKeys  int
	// deliveries counts every entry but hold markers, replays included:
	// what the endpoint's views count as waiting (ordering_view.go).
	deliveries int
}

// setWhy says why k waits ("": it does not), moving its entries into or out
// of its endpoint's failing count. l.mu is held.
func (l *Owner) setWhy(k *laneKey, why string, since time.Time) {
	if k.why == why {
		return
	}
	was, is := l.failing(k.why), l.failing(why)
	k.why, k.since = why, since
	if was == is {
		return
	}
	c := l.counts[k.id.ep]
	sign := -1
	if is {
		sign = 1
	}
	c.failingKeys += sign
	for _, e := range k.entries {
		if e.counted() {
			c.failing.add(e, sign)
		}
	}
	l.setCounts(k.id.ep, c)
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
// healthy endpoint's busy tasks do (bounds.go). The first entry, replays
// and hold markers stay. l.mu is held; the dead letters are stored on the
// term's goroutines.
func (l *Owner) trim(k *laneKey) {
	limit, ok := l.eng.MaxBacklog(k.id.ep)
	if !ok || !l.owner || len(k.entries) < 2 || l.proven(k.id.ep) {
		return
	}
	gen := l.gen
	for i := len(k.entries) - 1; i >= 1; i-- {
		why := l.passed(limit, k)
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

// over says why one more entry of size bytes for key of endpoint e (k: its
// key in the lane, nil when it has none) would pass the endpoint's
// max_backlog or its share of the lane ("": it would not). The entries
// this process stored and the feed has not read yet count as every
// entry, and as failing ones when k fails. l.mu is held.
func (l *Owner) over(ep string, limit int, k *laneKey, key string, size int64) string {
	return l.bounds(ep, limit, k, key, 1, size)
}

// passed says why endpoint e's entries pass its bounds now ("": they do
// not). l.mu is held.
func (l *Owner) passed(limit int, k *laneKey) string {
	return l.bounds(k.id.ep, limit, k, k.id.key, 0, 0)
}

// bounds says why endpoint e's entries, with n more of size bytes for key
// (k: its key, nil when it has none), pass its max_backlog or its share of
// the lane ("": they do not). Each failing key counts one entry more: the
// copy a retry stores before its first is removed. l.mu is held.
func (l *Owner) bounds(ep string, limit int, k *laneKey, key string, n int, size int64) string {
	share := l.o.Share
	c, ahead := l.counts[ep], l.ahead[ep]
	all := laneCount{n: c.all.n + ahead.n + c.failingKeys + n, bytes: c.all.bytes + ahead.bytes + size}
	if (limit <= 0 || all.n <= limit) && all.bytes <= share {
		return "" // within both bounds whatever counts
	}
	count, what := all, ""
	if l.proven(ep) {
		if k == nil || !l.failing(k.why) {
			return ""
		}
		count = laneCount{n: c.failing.n + ahead.n + c.failingKeys + n, bytes: c.failing.bytes + ahead.bytes + size}
		what = fmt.Sprintf(" while ordering key %q fails", key)
	}
	switch {
	case limit > 0 && count.n > limit:
		return fmt.Sprintf("the endpoint's backlog reached max_backlog (%d waiting deliveries)%s", limit, what)
	case count.bytes > share:
		return fmt.Sprintf("the endpoint's waiting ordered deliveries reached 1/%d of %s (%d bytes)%s", l.o.Shares, jetstream.LaneStream, share, what)
	}
	return ""
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
	if why := l.over(ep, limit, l.keys[laneKeyID{ep, key}], key, size); why != "" {
		return why, laneAhead{}
	}
	a := laneAhead{gen: l.gen, ep: ep, size: size}
	l.aheadAdd(a, 1)
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
	if seq == 0 || seq <= l.fed {
		l.aheadAdd(a, -1)
		return
	}
	l.aheadSeq[seq] = a
}

// aheadAdd adds sign times a to its endpoint's entries ahead of the feed.
// l.mu is held.
func (l *Owner) aheadAdd(a laneAhead, sign int) {
	c := l.ahead[a.ep]
	c.n += sign
	c.bytes += int64(sign) * a.size
	if c.n <= 0 {
		delete(l.ahead, a.ep)
		return
	}
	l.ahead[a.ep] = c
}

// readAhead ends the reservation of the entry at seq, which the feed has
// read. l.mu is held.
func (l *Owner) readAhead(seq uint64) {
	if a, ok := l.aheadSeq[seq]; ok {
		delete(l.aheadSeq, seq)
		l.aheadAdd(a, -1)
	}
}

// bound takes entry v, just read into k, out of it again when it was
// stored during this term and passes its endpoint's bounds, and has it
// dead-lettered as overflow; it reports whether it did. l.mu is held.
func (l *Owner) bound(k *laneKey, v *laneEntry, stored time.Time) bool {
	if !v.counted() || stored.Before(l.began) {
		return false
	}
	limit, ok := l.eng.MaxBacklog(k.id.ep)
	if !ok {
		return false
	}
	why := l.over(k.id.ep, limit, k, k.id.key, v.size)
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
			l.drop(v.seq)
		}
		l.mu.Unlock()
		if stale {
			l.deleteStale(v.seq, "dead-lettered")
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

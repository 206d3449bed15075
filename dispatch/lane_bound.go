package dispatch

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
func failing(why string) bool { return why != "" && !busyCause(why) }

// counted reports whether entry e counts toward its endpoint's bounds: a
// hold marker is no delivery, and a replay was asked for by an operator.
func (e *laneEntry) counted() bool { return !e.front }

// tally adds sign times e to its endpoint's counts. l.mu is held.
func (l *lane) tally(k *laneKey, e *laneEntry, sign int) {
	if e.hold {
		return
	}
	c := l.counts[k.id.ep]
	c.deliveries += sign
	if e.counted() {
		c.all.add(e, sign)
		if failing(k.why) {
			c.failing.add(e, sign)
		}
	}
	l.setCounts(k.id.ep, c)
}

// setCounts keeps c as endpoint ep's counts, none when it holds nothing.
// l.mu is held.
func (l *lane) setCounts(ep string, c laneCounts) {
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
func (l *lane) setWhy(k *laneKey, why string, since time.Time) {
	if k.why == why {
		return
	}
	was, is := failing(k.why), failing(why)
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
func (l *lane) trim(k *laneKey) {
	e := l.d.endpoint(k.id.ep)
	if e == nil || !l.owner || len(k.entries) < 2 || l.proven(e.id) {
		return
	}
	gen := l.gen
	for i := len(k.entries) - 1; i >= 1; i-- {
		why := l.passed(e, k)
		if why == "" {
			return
		}
		v := k.entries[i]
		if !v.counted() || v == k.cur {
			continue
		}
		l.unfile(k, v)
		l.wg.Go(func() { l.overflow(gen, k, v, e, why) })
	}
}

// over says why one more entry of size bytes for key of endpoint e (k: its
// key in the lane, nil when it has none) would pass the endpoint's
// max_backlog or its share of the lane ("": it would not). The entries
// this process stored and the feed has not read yet count as every
// entry, and as failing ones when k fails. l.mu is held.
func (l *lane) over(e *endpoint, k *laneKey, key string, size int64) string {
	return l.bounds(e, k, key, 1, size)
}

// passed says why endpoint e's entries pass its bounds now ("": they do
// not). l.mu is held.
func (l *lane) passed(e *endpoint, k *laneKey) string {
	return l.bounds(e, k, k.id.key, 0, 0)
}

// bounds says why endpoint e's entries, with n more of size bytes for key
// (k: its key, nil when it has none), pass its max_backlog or its share of
// the lane ("": they do not). Each failing key counts one entry more: the
// copy a retry stores before its first is removed. l.mu is held.
func (l *lane) bounds(e *endpoint, k *laneKey, key string, n int, size int64) string {
	limit := e.set.Load().ep.MaxBacklog
	share := jetstream.LaneBytes(l.d.tasksMax) / endpointShare
	c, ahead := l.counts[e.id], l.ahead[e.id]
	all := laneCount{n: c.all.n + ahead.n + c.failingKeys + n, bytes: c.all.bytes + ahead.bytes + size}
	if (limit <= 0 || all.n <= limit) && all.bytes <= share {
		return "" // within both bounds whatever counts
	}
	count, what := all, ""
	if l.proven(e.id) {
		if k == nil || !failing(k.why) {
			return ""
		}
		count = laneCount{n: c.failing.n + ahead.n + c.failingKeys + n, bytes: c.failing.bytes + ahead.bytes + size}
		what = fmt.Sprintf(" while ordering key %q fails", key)
	}
	switch {
	case limit > 0 && count.n > limit:
		return fmt.Sprintf("the endpoint's backlog reached max_backlog (%d waiting deliveries)%s", limit, what)
	case count.bytes > share:
		return fmt.Sprintf("the endpoint's waiting ordered deliveries reached 1/%d of %s (%d bytes)%s", endpointShare, jetstream.LaneStream, share, what)
	}
	return ""
}

// proven reports whether endpoint id delivered within laneProven.
func (l *lane) proven(id string) bool {
	h, ok := l.d.o.Breakers.Health(id)
	return ok && !h.LastSuccess.IsZero() && l.d.now().Sub(h.LastSuccess) < laneProven
}

// laneAhead is an entry this process is storing, counted toward its
// endpoint's bounds until the feed reads it (landed, take).
type laneAhead struct {
	gen  uint64
	ep   string
	size int64
}

// reserve says why dl, a fan-out delivery, is not stored in the lane:
// this process owns the lane and dl would pass its endpoint's bounds ("":
// it is stored, and counted ahead of the feed until landed). Another
// process's fan-out stores it, and the owner dead-letters it when it
// reads it (bound).
func (l *lane) reserve(dl *delivery) (string, laneAhead) {
	key := jetstream.OrderingKey(dl.hdr)
	size := taskSize(len(dl.data))
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.owner {
		return "", laneAhead{}
	}
	if why := l.over(dl.e, l.keys[laneKeyID{dl.e.id, key}], key, size); why != "" {
		return why, laneAhead{}
	}
	a := laneAhead{gen: l.gen, ep: dl.e.id, size: size}
	l.aheadAdd(a, 1)
	return "", a
}

// landed ends a's reservation once its entry is stored at seq (0: it was
// not): it counts until the feed reads it, unless it has already.
func (l *lane) landed(a laneAhead, seq uint64) {
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
func (l *lane) aheadAdd(a laneAhead, sign int) {
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
func (l *lane) readAhead(seq uint64) {
	if a, ok := l.aheadSeq[seq]; ok {
		delete(l.aheadSeq, seq)
		l.aheadAdd(a, -1)
	}
}

// bound takes entry v, just read into k, out of it again when it was
// stored during this term and passes its endpoint's bounds, and has it
// dead-lettered as overflow; it reports whether it did. l.mu is held.
func (l *lane) bound(k *laneKey, v *laneEntry, stored time.Time) bool {
	if !v.counted() || stored.Before(l.began) {
		return false
	}
	e := l.d.endpoint(k.id.ep)
	if e == nil {
		return false
	}
	why := l.over(e, k, k.id.key, v.size)
	if why == "" {
		return false
	}
	gen := l.gen
	l.wg.Go(func() { l.overflow(gen, k, v, e, why) })
	return true
}

// overflow dead-letters v, an entry of k that was never filed, as
// overflow because of why, and has it removed from the stream once its
// dead letter is stored; one whose dead letter could not be stored is
// filed after all.
func (l *lane) overflow(gen uint64, k *laneKey, v *laneEntry, e *endpoint, why string) {
	d := l.d
	msg, err := l.entryMsg(d.sendCtx, v)
	if isNotFound(err) {
		return // settled by an earlier term meanwhile
	}
	if err != nil {
		l.refile(gen, k, v)
		return
	}
	ev, st := taskOf(msg.hdr, msg.at)
	dl := &delivery{e: e, s: d.current(e), ev: &ev, st: st, data: msg.data, hdr: msg.hdr}
	dl.done = func(ok bool) {
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
	}
	dl.again = func(time.Duration) { dl.done(false) }
	d.overflow(dl, why)
}

// refile files v in its key after all: its dead letter was not stored.
func (l *lane) refile(gen uint64, k *laneKey, v *laneEntry) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	k = l.key(k.id)
	l.file(k, v)
	l.consider(k)
}

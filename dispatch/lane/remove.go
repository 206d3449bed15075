package lane

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/backoff"
)

// Removing settled entries from HOOKJET_ORDERED.
//
// A key's next entry goes only once its settled one is gone from the
// stream, so an owner that crashes right after does not attempt it again
// before the next. Deleting every entry on its own is a request and a
// tombstone (fsynced with nats.sync: always) per delivery, so the owner
// removes them in groups: the entries settle roughly in the order they
// were stored (keys take turns), and once every entry below a sequence is
// settled, one purge up to it removes them all. An entry that waits longer
// than laneRemoveWait for that (an earlier key is held, or retrying), or
// whose endpoint has no other key ready to go meanwhile (its key's turn
// would wait for nothing), is deleted on its own.
const (
	// laneRemoveGather is how long the remover lets settlements gather
	// before it looks: those of the same moment share one purge.
	laneRemoveGather = 2 * time.Millisecond
	// laneRemoveWait is how long a settled entry waits for a purge.
	laneRemoveWait = 25 * time.Millisecond
	// laneMoveWait is how long a settled entry waits for a purge while
	// the key that holds it back is being moved (move.go).
	laneMoveWait = 250 * time.Millisecond
	// laneRemoveRetry is how long a removal that failed waits to go again.
	laneRemoveRetry = time.Second
	// laneDeletes bounds the deletes of single entries in flight.
	laneDeletes = 16
	// laneKeep bounds the entries' messages the owner keeps in memory, so
	// that their attempts need not read them from the stream again.
	laneKeep = 16 << 20
	// laneIdle is how long the feed waits for an entry before it counts
	// the stream as read up to the last sequence it knew of.
	laneIdle = 100 * time.Millisecond
)

// remover removes the entries settled or dropped from the stream (one
// loop per term), and keeps what it needs to know which a purge may take.
// Its own type: the purge's frontier and the removals waiting are its
// state alone; it works under its Owner's lock.
type remover struct {
	l *Owner
	// live are the stream sequences of the entries filed in keys, and low
	// the lowest sequence that may still be live: every entry below it
	// the feed has read and none is filed, so one purge removes them all.
	// removals are the entries settled or dropped and not yet removed
	// from the stream, for the term's loop; kick wakes it.
	live     map[uint64]*laneKey
	low      uint64
	fed      uint64 // the last sequence the feed handed over
	removals []laneRemoval
	kick     chan struct{}
	// kept is the size of the entries' messages kept in memory (at most
	// laneKeep), so that most attempts need not read their entry again.
	kept int
}

// laneRemoval is an entry to remove from the stream: settled (k, of term
// gen, waits for it) or dropped (k nil).
type laneRemoval struct {
	seq    uint64
	at     time.Time
	k      *laneKey
	gen    uint64
	urgent bool // deleted at once when no purge covers it
	// of is the key a dropped entry was stored again for (again): its own
	// removal is nothing a move of that key would let a purge pass.
	of    *laneKey
	moved bool // an original of an entry moved behind k (move.go)
}

// file adds e to k, keeping its message in memory while there is room.
// An entry of the same event already filed keeps the one with more
// attempts; the other is dropped. l.mu is held.
func (l *Owner) file(k *laneKey, e *laneEntry) {
	drop := k.insert(e)
	if drop == e {
		e.msg = nil
		if _, filed := l.rm.live[e.seq]; !filed {
			l.rm.drop(e.seq)
		} // else the feed filed this very entry first
		return
	}
	l.rm.live[e.seq] = k
	l.tally.add(k.id.ep, k.why, e, 1)
	if e.msg != nil && l.rm.kept+e.msg.size <= laneKeep {
		l.rm.kept += e.msg.size
	} else {
		e.msg = nil
	}
	if drop != nil {
		l.tally.add(k.id.ep, k.why, drop, -1)
		l.forget(drop)
		l.rm.drop(drop.seq)
	}
}

// unfile takes e out of k. l.mu is held.
func (l *Owner) unfile(k *laneKey, e *laneEntry) {
	if k.remove(e.seq) {
		l.tally.add(k.id.ep, k.why, e, -1)
	}
	l.forget(e)
}

// forget releases what the lane holds for e, no longer filed. l.mu is held.
func (l *Owner) forget(e *laneEntry) {
	delete(l.rm.live, e.seq)
	if e.msg != nil {
		l.rm.kept -= e.msg.size
		e.msg = nil
	}
}

// drop has entry seq, filed nowhere, removed in the background. l.mu is
// held, so nothing here may wait.
func (x *remover) drop(seq uint64) {
	x.removeLater(laneRemoval{seq: seq, at: time.Now()})
}

func (x *remover) removeLater(r laneRemoval) {
	x.removals = append(x.removals, r)
	select {
	case x.kick <- struct{}{}:
	default:
	}
}

// keptMsgOf makes a message read or stored by the owner a keptMsg.
func keptMsgOf(h nats.Header, data []byte, at time.Time) *keptMsg {
	size := len(data) + 64
	for k, vs := range h {
		for _, v := range vs {
			size += len(k) + len(v) + 16
		}
	}
	return &keptMsg{Msg: Msg{Header: h, Data: data, Stored: at}, size: size}
}

// remover removes the entries settled or dropped in the term, until ctx
// ends.
func (x *remover) loop(ctx context.Context, gen uint64) {
	l := x.l
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-x.kick:
		case <-t.C:
		}
		backoff.Sleep(ctx, laneRemoveGather)
		if ctx.Err() != nil {
			return
		}
		// The requests use the send context: a removal under way when the
		// term ends still completes, or its key's entry would be delivered
		// again by the next owner.
		purgeTo, covered, singles, wait := x.removable(gen)
		if purgeTo != 0 {
			if err := x.purge(l.o.Sends, purgeTo); err != nil {
				l.log.Debug("purge settled ordered entries", "below", purgeTo, "err", err)
				singles = append(singles, covered...)
				covered = nil
			}
		}
		x.removed(gen, covered)
		failed := x.deleteEach(l.o.Sends, gen, singles)
		if failed {
			wait = laneRemoveRetry
		}
		if wait > 0 {
			t.Reset(wait)
		}
	}
}

// removable advances low past the entries that are not filed any more, and
// splits the removals waiting into those a purge below purgeTo removes
// (purgeTo 0: none needs one), those to delete on their own now, and the
// rest, which wait (for at most wait).
func (x *remover) removable(gen uint64) (purgeTo uint64, covered, singles []laneRemoval, wait time.Duration) {
	l := x.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return 0, nil, nil, 0
	}
	x.advanceLow()
	now := time.Now()
	limit := laneRemoveWait
	if k := x.live[x.low]; k != nil && k.unremoved > 0 {
		// The key that holds the purge back is being moved behind the
		// others (move.go): the purge passes it once moved.
		limit = laneMoveWait
	}
	rest := x.removals[:0]
	for _, r := range x.removals {
		switch left := limit - now.Sub(r.at); {
		case r.seq < x.low:
			covered = append(covered, r)
			purgeTo = x.low
		case r.urgent || left <= 0:
			singles = append(singles, r)
		default:
			rest = append(rest, r)
			if wait == 0 || left < wait {
				wait = left
			}
		}
	}
	clear(x.removals[len(rest):])
	x.removals = rest
	if waiting := len(singles) + len(rest); waiting > 0 && x.low <= x.fed {
		l.mv.unpin(gen, waiting)
	}
	l.mv.unpinAhead(gen)
	return purgeTo, covered, singles, wait
}

// advanceLow moves low past the sequences the feed has handed over (fed:
// read may count entries the feed only believes deleted) that are not
// filed: one at a time while few are left to pass, or at once to the
// lowest filed one when the gap is wide (a key held for days while
// millions of entries went by). l.mu is held.
func (x *remover) advanceLow() {
	if x.fed >= x.low && uint64(len(x.live))*4 < x.fed-x.low {
		next := x.fed + 1
		for seq := range x.live {
			next = min(next, seq)
		}
		x.low = max(x.low, next)
		return
	}
	for x.low <= x.fed {
		if _, ok := x.live[x.low]; ok {
			return
		}
		x.low++
	}
}

// purge removes every entry of HOOKJET_ORDERED below seq.
func (x *remover) purge(ctx context.Context, seq uint64) error {
	l := x.l
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return l.stream().Purge(ctx, natsjs.WithPurgeSequence(seq))
}

// deleteEach deletes the entries of rs on their own, a few at a time, and
// reports whether some could not be (they wait to go again).
func (x *remover) deleteEach(ctx context.Context, gen uint64, rs []laneRemoval) (failed bool) {
	l := x.l
	if len(rs) == 0 {
		return false
	}
	st := l.stream()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		done  []laneRemoval
		again []laneRemoval
	)
	sem := make(chan struct{}, laneDeletes)
	for _, r := range rs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := deleteEntry(ctx, st, r.seq)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				l.log.Debug("delete an ordered entry", "seq", r.seq, "err", err)
				again = append(again, r)
				return
			}
			done = append(done, r)
		})
	}
	wg.Wait()
	x.removed(gen, done)
	if len(again) > 0 {
		l.mu.Lock()
		if gen == l.gen {
			x.removals = append(x.removals, again...)
		}
		l.mu.Unlock()
	}
	return len(again) > 0
}

// removed lets the keys that waited for the removals rs go on.
func (x *remover) removed(gen uint64, rs []laneRemoval) {
	l := x.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	for _, r := range rs {
		switch {
		case r.k == nil || r.gen != gen:
		case r.moved:
			l.mv.moveEnded(r.k)
		default:
			l.rn.next(r.k)
		}
	}
}

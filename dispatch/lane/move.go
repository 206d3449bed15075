package lane

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// Moving a waiting key's entries behind the others.
//
// Settled entries leave HOOKJET_ORDERED mostly by one purge below the
// lowest entry still filed (remove.go). A key that waits (a retry's
// due time, its endpoint's admission, the ack floor) keeps its entries at
// the sequences they were stored at, so no purge passes them while it
// waits and every other key's settled entries are deleted one tombstone
// (one synced write) each. So the owner stores such a key's entries again
// at the end of the stream, in one atomic batch (one synced write), and
// has the originals removed with the others' settled entries:
//   - when its first entry is stored again for a retry or a hold marker
//     (the entries below it: moveBehind);
//   - when a key waiting for a retry's due time, or held after a dead
//     letter, has its lowest entry in the lower half of what the feed has
//     read above the purge's frontier (the frontier is about to reach it:
//     unpinAhead, for at most laneAheadKeys such keys);
//   - when the key holds the lowest entry, nothing of it is under way, and
//     at least laneUnpinMin settled entries, and half as many as it has,
//     wait above it (unpin).
//
// While a move goes (15-20 ms under a burst, mostly the server's queue),
// the settled entries wait for the purge up to laneMoveWait instead of
// laneRemoveWait. The owner reads close behind the fan-out's appends
// (about 100 ms under a burst), so a key that fails through a burst is
// moved every 50-100 ms; each move rewrites at most laneMoveMax entries
// and only with at least half as many entries of other keys above them.
// Measured (orderedfail): a settled entry of the other keys waits 2-5 ms
// longer for its removal than without the failing key, where it waited
// 2-22 ms longer with the moves at the frontier alone.
//
// A key's order is its events' sequence in HOOKJET_EVENTS, not the lane's,
// so the copies keep their place in it, and moving only some (a failed
// publish) changes nothing. A hold marker moves with them (it is the key's
// only front entry: a replay releases it), keeping the time the key was
// first held (hdrLaneSince); replays waiting their turn do not move, so
// they keep their order among themselves. A crash after a copy is stored leaves the copy
// and its original: the next owner reads both before any of the key goes
// (its ack floor waits for the feed), and files one (laneKey.insert). The
// key's next attempt waits until the originals are gone from the stream,
// so an owner that crashes later cannot find an original of an entry
// already delivered from its copy.
const (
	// laneMoveMax bounds the entries moved at once: a key with more
	// waiting keeps them where they are (the others' settled entries then
	// go one by one while it waits), so a move rewrites at most this many.
	laneMoveMax = 64
	// laneUnpinMin is how many settled entries must wait above a key's
	// before it is moved for them (and half as many as the key has): a
	// move is one synced write that saves that many, and rewrites at most
	// twice as many entries as it unblocks.
	laneUnpinMin = 4
	// hdrLaneMoved on a copy names the sequence of the entry it copies.
	hdrLaneMoved = "Hookjet-Ordered-Moved"
	// hdrLaneSince on a hold marker's copy is when the key was first held.
	hdrLaneSince = "Hookjet-Ordered-Since"
)

// mover stores a waiting key's entries again behind the others (see
// above). Its own type: which entries are being moved, and which keys wait
// for a due time or a dead letter, are its state alone; it works under its
// Owner's lock.
type mover struct {
	l *Owner
	// moving are the sequences of entries being stored again behind their
	// key: the feed leaves their copies to the mover.
	moving map[uint64]struct{}
	// blocked are the keys whose first entry waits for its due time or
	// is a hold marker (unpinAhead moves them ahead of the purge).
	blocked map[*laneKey]struct{}
}

// laneMove is one entry to store again: the original and its message.
type laneMove struct {
	old *laneEntry
	msg *keptMsg
}

// moveBehind stores k's waiting entries with sequences below above again
// after it, when there are at most laneMoveMax of them and the lowest is
// the lane's lowest filed entry with something above it to remove, and
// has the originals removed. k is busy (its first entry being settled), so
// none of them is under way.
func (x *mover) moveBehind(gen uint64, k *laneKey, above uint64) {
	l := x.l
	l.mu.Lock()
	moves := x.movable(gen, k, above, 0)
	l.mu.Unlock()
	x.move(gen, k, moves)
}

// unpin moves the entries of k, the key of the lane's lowest filed entry,
// when nothing of it is under way (it waits for a retry's due time, for
// its endpoint to admit it, or for the ack floor) and the settled entries
// waiting above it for a purge are at least laneUnpinMin and half as many
// as its entries.
// l.mu is held; the move goes on the term's goroutine.
func (x *mover) unpin(gen uint64, waiting int) {
	l := x.l
	k := l.rm.live[l.rm.low]
	if k == nil || k.busy || k.unremoved > 0 || l.keys[k.id] != k || waiting < max(laneUnpinMin, len(k.entries)/2) {
		return
	}
	if moves := x.movable(gen, k, ^uint64(0), 0); len(moves) > 0 {
		l.wg.Go(func() { x.move(gen, k, moves) })
	}
}

// laneAheadKeys bounds the waiting keys unpinAhead looks at: with more
// (an endpoint failing for every key), moving them would only shuffle
// them among each other, and unpin moves the lowest for what waits above.
const laneAheadKeys = 16

// unpinAhead moves the entries of the keys waiting for a retry's due time
// or held after a dead letter whose lowest entry the purge's frontier is about to reach (in the lower
// half of what the feed has read above it), so that it moves on without
// waiting for them. l.mu is held; the moves go on the term's goroutines.
func (x *mover) unpinAhead(gen uint64) {
	l := x.l
	if len(x.blocked) == 0 || len(x.blocked) > laneAheadKeys || l.rm.fed <= l.rm.low+2*laneUnpinMin {
		return
	}
	reach := l.rm.low + (l.rm.fed-l.rm.low)/2
	for k := range x.blocked {
		if k.busy || k.unremoved > 0 {
			continue
		}
		if moves := x.movable(gen, k, ^uint64(0), reach); len(moves) > 0 {
			l.wg.Go(func() { x.move(gen, k, moves) })
		}
	}
}

// move stores moves again behind everything in the lane and files the
// copies in place of their originals.
func (x *mover) move(gen uint64, k *laneKey, moves []laneMove) {
	l := x.l
	if len(moves) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(l.o.Sends, 5*time.Second)
	defer cancel()
	for i := range moves {
		if moves[i].msg == nil {
			raw, err := l.load(ctx, moves[i].old)
			if err != nil {
				l.log.Debug("read an ordered entry to move", "seq", moves[i].old.seq, "err", err)
				x.unmark(gen, k, moves)
				return
			}
			moves[i].msg = &keptMsg{Msg: Msg{Header: raw.Header, Data: raw.Data, Stored: raw.Time}}
		}
	}
	msgs := make([]*nats.Msg, len(moves))
	for i, mv := range moves {
		m := nats.NewMsg(jetstream.LanePrefix + k.id.ep)
		m.Header = nats.Header(http.Header(mv.msg.Header).Clone())
		seq := strconv.FormatUint(mv.old.seq, 10)
		m.Header.Set(jetstream.HdrMsgID, "ord-mv-"+seq)
		m.Header.Set(hdrLaneMoved, seq)
		if mv.old.hold {
			// Held since the first marker's time, not the copy's.
			m.Header.Set(hdrLaneSince, mv.old.first.UTC().Format(time.RFC3339Nano))
		}
		m.Data = mv.msg.Data
		msgs[i] = m
		moves[i].msg = keptMsgOf(m.Header, m.Data, mv.msg.Stored)
	}
	seqs := make([]uint64, len(moves))
	if first, err := jetstream.PublishLaneBatch(ctx, l.o.NC, msgs); err == nil {
		for i := range seqs {
			seqs[i] = first + uint64(i)
		}
	} else {
		// A server without atomic batches, or one refused: one by one
		// (a copy stored by a batch that timed out is a duplicate, and its
		// PubAck says where it is).
		l.log.Debug("move ordered entries in one batch", "entries", len(msgs), "err", err)
		x.publishEach(ctx, msgs, seqs)
	}
	x.moved(gen, k, moves, seqs)
}

// publishEach stores msgs one by one, setting seqs[i] to where msgs[i]
// is stored (0: not stored).
func (x *mover) publishEach(ctx context.Context, msgs []*nats.Msg, seqs []uint64) {
	l := x.l
	acks := make([]natsjs.PubAckFuture, 0, len(msgs))
	for _, m := range msgs {
		f, err := l.o.JS.PublishMsgAsync(m)
		if err != nil {
			break
		}
		acks = append(acks, f)
	}
	for i, f := range acks {
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			l.log.Debug("move an ordered entry", "err", err)
		case <-ctx.Done():
		}
	}
}

// movable picks k's entries to move behind above (not its entry under
// way, nor front entries) and marks them moving, so that the feed leaves
// their copies to the mover; none when more than laneMoveMax, when the
// lowest is not the lane's lowest filed entry, or when nothing above it
// waits to be removed. With reach not 0, the lowest need only be at or
// below reach (and half as many of the lane's read entries above it as k
// has). l.mu is held.
func (x *mover) movable(gen uint64, k *laneKey, above, reach uint64) []laneMove {
	l := x.l
	if gen != l.gen || l.keys[k.id] != k {
		return nil
	}
	var moves []laneMove
	lowest := above
	for _, e := range k.entries {
		if e.seq >= above || e.front && !e.hold || e == k.cur {
			continue // a replay keeps its place among the key's replays
		}
		if len(moves) == laneMoveMax {
			return nil
		}
		moves = append(moves, laneMove{old: e, msg: e.msg})
		lowest = min(lowest, e.seq)
	}
	l.rm.advanceLow()
	switch {
	case len(moves) == 0, len(l.rm.live) == len(k.entries) && !x.othersRemoving(k):
		return nil
	case reach == 0 && lowest != l.rm.low:
		return nil
	case reach != 0 && (lowest > reach || lowest < l.rm.low || l.rm.fed-lowest < uint64(max(laneUnpinMin, len(k.entries)/2))):
		return nil
	}
	for _, mv := range moves {
		x.moving[mv.old.seq] = struct{}{}
	}
	k.unremoved++ // until moved: nothing of k starts, and the purge waits
	return moves
}

// othersRemoving reports whether some removal waiting is not k's own copy
// stored again (again): moving k lets a purge take those. l.mu is held.
func (x *mover) othersRemoving(k *laneKey) bool {
	l := x.l
	for _, r := range l.rm.removals {
		if r.of != k {
			return true
		}
	}
	return false
}

// unmark ends the moves: nothing was stored.
func (x *mover) unmark(gen uint64, k *laneKey, moves []laneMove) {
	l := x.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen {
		for _, mv := range moves {
			delete(x.moving, mv.old.seq)
		}
		x.moveEnded(k)
	}
}

// moveEnded lets k go on once its originals are removed. l.mu is held.
func (x *mover) moveEnded(k *laneKey) {
	l := x.l
	k.unremoved--
	if k.unremoved == 0 && l.keys[k.id] == k {
		l.consider(k)
	}
}

// moved files the copies stored (seqs[i], 0: not stored) in place of their
// originals, which are removed; k waits for that before its next attempt.
// A copy of an ended term is left to the next owner, which files one of
// the two.
func (x *mover) moved(gen uint64, k *laneKey, moves []laneMove, seqs []uint64) {
	l := x.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	n := 0
	for i, mv := range moves {
		delete(x.moving, mv.old.seq)
		seq := seqs[i]
		if seq == 0 {
			continue
		}
		if seq > l.gate.read {
			l.own[seq] = struct{}{}
		}
		if l.keys[k.id] != k || !k.has(mv.old) {
			// Taken out meanwhile (its endpoint deleted): so is its copy.
			l.rm.drop(seq)
			continue
		}
		e := *mv.old
		e.seq, e.msg = seq, mv.msg
		if e.front {
			e.order = seq // a hold marker's place is its own sequence
		}
		l.unfile(k, mv.old)
		l.file(k, &e)
		k.unremoved++
		n++
		l.rm.removeLater(laneRemoval{seq: mv.old.seq, at: time.Now(), k: k, gen: gen, moved: true})
	}
	x.moveEnded(k)
	if n > 0 {
		l.log.Debug("moved an ordered key's waiting entries behind it", "endpoint", k.id.ep, "entries", n)
	}
}

// has reports whether e is filed in k.
func (k *laneKey) has(e *laneEntry) bool {
	for _, o := range k.entries {
		if o == e {
			return true
		}
	}
	return false
}

// movedFrom is the sequence of the entry a copy stored by moveBehind
// copies (0: not a copy).
func movedFrom(h nats.Header) uint64 {
	seq, _ := strconv.ParseUint(h.Get(hdrLaneMoved), 10, 64)
	return seq
}

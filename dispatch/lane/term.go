package lane

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/jetstream"
)

// laneFloorPoll is how often the owner reads the fan-out consumer's ack
// floor while a key's first entry waits for it.
const laneFloorPoll = 20 * time.Millisecond

// begin starts a term as the lane's owner: it reads HOOKJET_ORDERED from its
// first entry and delivers the keys, until end.
func (l *Owner) begin(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	st, err := l.o.JS.Stream(ctx, jetstream.LaneStream)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.gen++
	gen := l.gen
	l.owner, l.st, l.tally.began = true, st, l.now()
	l.gate.begin()
	l.rm.low, l.rm.fed, l.rm.removals = 0, 0, nil
	l.ctx, l.cancel = context.WithCancel(parent)
	term := l.ctx
	l.mu.Unlock()
	l.wg.Add(3)
	go func() {
		defer l.wg.Done()
		l.feed(term, gen)
	}()
	go func() {
		defer l.wg.Done()
		l.rm.loop(term, gen)
	}()
	go func() {
		defer l.wg.Done()
		l.pollFloor(term, gen)
	}()
	return nil
}

// end ends the owner's term: the feed, the floor poller and the runners
// stop; attempts in flight finish and delete their entries when they
// succeed, but change nothing else.
func (l *Owner) end() {
	l.mu.Lock()
	if !l.owner {
		l.mu.Unlock()
		return
	}
	l.owner = false
	l.gen++
	cancel := l.cancel
	for _, k := range l.keys {
		if k.timer != nil {
			k.timer.Stop()
		}
	}
	l.keys = map[laneKeyID]*laneKey{}
	l.byEp = map[string]map[string]*laneKey{}
	l.own = map[uint64]struct{}{}
	l.gate.clear()
	l.rn.ready = map[string][]*laneKey{}
	l.rm.live, l.rm.kept = map[uint64]*laneKey{}, 0
	l.mv.moving = map[uint64]struct{}{}
	l.mv.blocked = map[*laneKey]struct{}{}
	l.tally.clear()
	pending := l.rm.removals
	l.rm.removals = nil
	l.mu.Unlock()
	cancel()
	l.wg.Wait()
	// What the term settled leaves the stream, or the next owner would
	// deliver it again.
	l.rm.deleteEach(l.o.Sends, 0, pending)
	l.mu.Lock()
	l.rn.running = map[string]bool{}
	l.mu.Unlock()
	if l.o.Held != nil {
		l.o.Held.Reset()
	}
}

// feed reads every entry of HOOKJET_ORDERED into the keys' queues, with
// one ordered consumer as long as it can, from where it left off after.
func (l *Owner) feed(ctx context.Context, gen uint64) {
	for ctx.Err() == nil {
		l.mu.Lock()
		start := l.rm.fed + 1 // not read: an idle feed counts deleted entries as read
		l.mu.Unlock()
		err := jetstream.ReadLane(ctx, l.o.JS, start, laneIdle, func(m natsjs.Msg, meta *natsjs.MsgMetadata) error {
			l.take(gen, meta.Sequence.Stream, m.Headers(), m.Data(), meta.Timestamp)
			return nil
		}, func(caughtUp func() bool) { l.idle(gen, caughtUp) })
		if ctx.Err() == nil {
			l.log.Debug("read the ordered lane", "err", err)
			backoff.Sleep(ctx, 100*time.Millisecond)
		}
	}
}

// idle notes that nothing came to the feed for laneIdle: when caughtUp (a
// question to the server) confirms that the feed has handed over every
// entry stored before it asked, the entries up to the pending floor's last
// sequence (read before the question) have all been read, or deleted.
// Silence alone is not enough: a stalled or recreated ordered consumer is
// silent too, and a floor applied before a key's earlier entry is read
// would let its later event go first.
func (l *Owner) idle(gen uint64, caughtUp func() bool) {
	l.mu.Lock()
	last := l.gate.pending()
	waits := gen == l.gen && last != 0
	l.mu.Unlock()
	if !waits || !caughtUp() { // no question to the server when nothing waits
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen {
		l.considerIDs(l.gate.readTo(last))
	}
}

// considerIDs considers the keys ids (those the floor let go). l.mu is
// held.
func (l *Owner) considerIDs(ids []laneKeyID) {
	for _, id := range ids {
		if k := l.keys[id]; k != nil {
			l.consider(k)
		}
	}
}

// take files one entry read from the stream.
func (l *Owner) take(gen, seq uint64, h nats.Header, data []byte, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen || !l.owner {
		return
	}
	if l.rm.fed == 0 {
		// The term's first entry: none below it is left to remove.
		l.rm.low = max(l.rm.low, seq)
	}
	l.rm.fed = max(l.rm.fed, seq)
	l.tally.readAhead(seq)
	// After the entry is filed: a floor that waited for the feed to read
	// this far may let its key go, and the key must have it by then.
	defer func() { l.considerIDs(l.gate.readTo(seq)) }()
	if _, ok := l.own[seq]; ok {
		delete(l.own, seq)
		return
	}
	if _, ok := l.mv.moving[movedFrom(h)]; ok {
		return // a copy its mover files (move.go)
	}
	ep := h.Get(jetstream.HdrEndpoint)
	if id := h.Get(hdrLaneRelease); id != "" {
		l.release(ep, id)
		l.rm.drop(seq)
		return
	}
	e, key := entryOf(seq, h, at)
	if ep == "" || key == "" {
		l.rm.drop(seq)
		return
	}
	e.msg = keptMsgOf(h, data, at)
	e.size = int64(e.msg.size)
	k := l.key(laneKeyID{ep, key})
	if l.bound(k, &e, at) {
		l.consider(k) // dead-lettered instead: a key made for it goes
		return
	}
	l.file(k, &e)
	if e.front && !e.hold {
		// A replay of the key's held dead letter releases the hold; the
		// replay itself goes first.
		l.releaseIn(k, e.id)
	}
	l.consider(k)
}

// key returns the key's queue, made when missing.
func (l *Owner) key(id laneKeyID) *laneKey {
	k := l.keys[id]
	if k == nil {
		k = &laneKey{id: id}
		l.keys[id] = k
		if l.byEp[id.ep] == nil {
			l.byEp[id.ep] = map[string]*laneKey{}
		}
		l.byEp[id.ep][id.key] = k
	}
	return k
}

// release removes the hold marker of dead-lettered event id at endpoint ep
// (its dead letter was discarded) and lets its key go on.
func (l *Owner) release(ep, id string) {
	for _, k := range l.byEp[ep] {
		if l.releaseIn(k, id) {
			l.consider(k)
		}
	}
}

func (l *Owner) releaseIn(k *laneKey, id string) bool {
	for _, o := range k.entries {
		if o.hold && o.id == id {
			l.unfile(k, o)
			l.rm.drop(o.seq)
			if k.why == "dead_letter" {
				l.setWhy(k, "", time.Time{})
			}
			return true
		}
	}
	return false
}

// consider starts k's first entry when nothing of k is under way and it may
// go now, or arranges to look again when it may. l.mu is held.
func (l *Owner) consider(k *laneKey) {
	if k.busy || k.unremoved > 0 || !l.owner {
		return
	}
	delete(l.mv.blocked, k)
	if len(k.entries) == 0 {
		if k.timer != nil {
			k.timer.Stop()
		}
		l.setWhy(k, "", time.Time{}) // it fails no more: it has nothing
		delete(l.keys, k.id)
		if m := l.byEp[k.id.ep]; m != nil {
			delete(m, k.id.key)
			if len(m) == 0 {
				delete(l.byEp, k.id.ep)
			}
		}
		l.gate.stop(k.id)
		return
	}
	h := k.entries[0]
	now := l.now()
	if h.hold {
		l.setWhy(k, "dead_letter", h.first)
		l.mv.blocked[k] = struct{}{}
		return
	}
	if !h.front && l.gate.blocks(h.order) {
		// An earlier event of the key may still be on its way to the lane.
		l.gate.wait(k.id, h.order)
		return
	}
	l.gate.stop(k.id)
	if h.due.After(now) {
		l.setWhy(k, "retrying", h.first)
		l.mv.blocked[k] = struct{}{}
		l.rn.lookAt(k, h.due)
		return
	}
	k.busy, k.cur = true, h
	ep := k.id.ep
	l.rn.ready[ep] = append(l.rn.ready[ep], k)
	if !l.rn.running[ep] {
		l.rn.running[ep] = true
		l.wg.Add(1)
		gen, ctx := l.gen, l.ctx
		go func() {
			defer l.wg.Done()
			l.rn.run(ctx, gen, ep)
		}()
	}
}

// pollFloor reads the fan-out consumer's ack floor while some key waits for
// it, and lets those keys go once it has risen past them.
func (l *Owner) pollFloor(ctx context.Context, gen uint64) {
	t := time.NewTicker(laneFloorPoll)
	defer t.Stop()
	for {
		l.mu.Lock()
		waiting := l.gate.waiting()
		l.mu.Unlock()
		if waiting {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		} else {
			select {
			case <-ctx.Done():
				return
			case <-l.gate.wake:
			case <-time.After(time.Second):
			}
		}
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		floor, err := l.eng.AckFloor(ictx)
		var last uint64
		if err == nil {
			// Read after the floor: every entry of an event below it has
			// a sequence up to last.
			var st *natsjs.StreamInfo
			if st, err = l.stream().Info(ictx); err == nil {
				last = st.State.LastSeq
			}
		}
		cancel()
		if err != nil {
			continue
		}
		l.offerFloor(gen, floor, last)
	}
}

// offerFloor applies the fan-out's ack floor, read before the lane's last
// sequence was last, once the feed has read up to last.
func (l *Owner) offerFloor(gen, floor, last uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	l.considerIDs(l.gate.offer(floor, last))
}

// load reads cur's message from the stream.
func (l *Owner) load(ctx context.Context, cur *laneEntry) (*natsjs.RawStreamMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return l.stream().GetMsg(ctx, cur.seq)
}

// entryMsg is cur's message: kept in memory, or read from the stream.
func (l *Owner) entryMsg(ctx context.Context, cur *laneEntry) (*keptMsg, error) {
	l.mu.Lock()
	m := cur.msg
	l.mu.Unlock()
	if m != nil {
		return m, nil
	}
	raw, err := l.load(ctx, cur)
	if err != nil {
		return nil, err
	}
	return &keptMsg{Msg: Msg{Header: raw.Header, Data: raw.Data, Stored: raw.Time}}, nil
}

// stream is HOOKJET_ORDERED's handle.
func (l *Owner) stream() natsjs.Stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// laneFloorPoll is how often the owner reads the fan-out consumer's ack
// floor while a key's first entry waits for it.
const laneFloorPoll = 20 * time.Millisecond

// begin starts a term as the lane's owner: it reads HOOKJET_ORDERED from its
// first entry and delivers the keys, until end.
func (l *lane) begin(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, 5*time.Second)
	defer cancel()
	st, err := l.d.o.JS.Stream(ctx, jetstream.LaneStream)
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.gen++
	gen := l.gen
	l.owner, l.st, l.read, l.floor, l.began = true, st, 0, 0, l.d.now()
	l.pendFloor, l.pendLast = 0, 0
	l.low, l.fed, l.removals = 0, 0, nil
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
		l.remover(term, gen)
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
func (l *lane) end() {
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
	l.floorWait, l.floorQueue = map[laneKeyID]uint64{}, nil
	l.ready = map[string][]*laneKey{}
	l.live, l.kept = map[uint64]*laneKey{}, 0
	l.moving = map[uint64]struct{}{}
	l.blocked = map[*laneKey]struct{}{}
	l.counts = map[string]laneCounts{}
	l.ahead, l.aheadSeq = map[string]laneCount{}, map[uint64]laneAhead{}
	pending := l.removals
	l.removals = nil
	l.mu.Unlock()
	cancel()
	l.wg.Wait()
	// What the term settled leaves the stream, or the next owner would
	// deliver it again.
	l.deleteEach(l.d.sendCtx, 0, pending)
	l.mu.Lock()
	l.running = map[string]bool{}
	l.mu.Unlock()
	l.d.o.Metrics.OrderingHeld.Reset()
}

// feed reads every entry of HOOKJET_ORDERED into the keys' queues, with
// one ordered consumer as long as it can, from where it left off after.
func (l *lane) feed(ctx context.Context, gen uint64) {
	for ctx.Err() == nil {
		l.mu.Lock()
		start := l.fed + 1 // not read: an idle feed counts deleted entries as read
		l.mu.Unlock()
		err := jetstream.ReadLane(ctx, l.d.o.JS, start, laneIdle, func(m natsjs.Msg, meta *natsjs.MsgMetadata) error {
			l.take(gen, meta.Sequence.Stream, m.Headers(), m.Data(), meta.Timestamp)
			return nil
		}, func(caughtUp func() bool) { l.idle(gen, caughtUp) })
		if ctx.Err() == nil {
			l.d.log.Debug("read the ordered lane", "err", err)
			sleep(ctx, 100*time.Millisecond)
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
func (l *lane) idle(gen uint64, caughtUp func() bool) {
	l.mu.Lock()
	last := l.pendLast
	waits := gen == l.gen && last > l.read
	l.mu.Unlock()
	if !waits || !caughtUp() { // no question to the server when nothing waits
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen {
		l.readTo(last)
	}
}

// readTo notes that the feed has read every entry up to seq, and applies
// an ack floor that waited for it. l.mu is held.
func (l *lane) readTo(seq uint64) {
	l.read = max(l.read, seq)
	if l.pendLast != 0 && l.read >= l.pendLast {
		floor := l.pendFloor
		l.pendFloor, l.pendLast = 0, 0
		l.applyFloor(floor)
	}
}

// take files one entry read from the stream.
func (l *lane) take(gen, seq uint64, h nats.Header, data []byte, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen || !l.owner {
		return
	}
	if l.fed == 0 {
		// The term's first entry: none below it is left to remove.
		l.low = max(l.low, seq)
	}
	l.fed = max(l.fed, seq)
	l.readAhead(seq)
	// After the entry is filed: a floor that waited for the feed to read
	// this far may let its key go, and the key must have it by then.
	defer l.readTo(seq)
	if _, ok := l.own[seq]; ok {
		delete(l.own, seq)
		return
	}
	if _, ok := l.moving[movedFrom(h)]; ok {
		return // a copy its mover files (lane_move.go)
	}
	ep := h.Get(jetstream.HdrEndpoint)
	if id := h.Get(hdrLaneRelease); id != "" {
		l.release(ep, id)
		l.drop(seq)
		return
	}
	e, key := entryOf(seq, h, at)
	if ep == "" || key == "" {
		l.drop(seq)
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
func (l *lane) key(id laneKeyID) *laneKey {
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
func (l *lane) release(ep, id string) {
	for _, k := range l.byEp[ep] {
		if l.releaseIn(k, id) {
			l.consider(k)
		}
	}
}

func (l *lane) releaseIn(k *laneKey, id string) bool {
	for _, o := range k.entries {
		if o.hold && o.id == id {
			l.unfile(k, o)
			l.drop(o.seq)
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
func (l *lane) consider(k *laneKey) {
	if k.busy || k.unremoved > 0 || !l.owner {
		return
	}
	delete(l.blocked, k)
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
		delete(l.floorWait, k.id)
		return
	}
	h := k.entries[0]
	now := l.d.now()
	if h.hold {
		l.setWhy(k, "dead_letter", h.first)
		l.blocked[k] = struct{}{}
		return
	}
	if !h.front && h.order > l.floor+1 {
		// An earlier event of the key may still be on its way to the lane.
		l.waitFloor(k, h.order)
		return
	}
	delete(l.floorWait, k.id)
	if h.due.After(now) {
		l.setWhy(k, "retrying", h.first)
		l.blocked[k] = struct{}{}
		l.lookAt(k, h.due)
		return
	}
	k.busy, k.cur = true, h
	ep := k.id.ep
	l.ready[ep] = append(l.ready[ep], k)
	if !l.running[ep] {
		l.running[ep] = true
		l.wg.Add(1)
		gen, ctx := l.gen, l.ctx
		go func() {
			defer l.wg.Done()
			l.run(ctx, gen, ep)
		}()
	}
}

// lookAt considers k again at at.
func (l *lane) lookAt(k *laneKey, at time.Time) {
	if k.timer != nil {
		k.timer.Stop()
	}
	gen := l.gen
	k.timer = time.AfterFunc(max(0, at.Sub(l.d.now())), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if gen == l.gen && l.keys[k.id] == k {
			k.timer = nil
			l.consider(k)
		}
	})
}

// pollFloor reads the fan-out consumer's ack floor while some key waits for
// it, and lets those keys go once it has risen past them.
func (l *lane) pollFloor(ctx context.Context, gen uint64) {
	t := time.NewTicker(laneFloorPoll)
	defer t.Stop()
	for {
		l.mu.Lock()
		waiting := len(l.floorWait) > 0
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
			case <-l.wake:
			case <-time.After(time.Second):
			}
		}
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		info, err := l.d.fan.cons.Info(ictx)
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
		l.offerFloor(gen, info.AckFloor.Stream, last)
	}
}

// offerFloor applies the fan-out's ack floor, read before the lane's last
// sequence was last, once the feed has read up to last.
func (l *lane) offerFloor(gen, floor, last uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen || floor <= l.floor {
		return
	}
	if l.read >= last {
		l.applyFloor(floor)
		return
	}
	l.pendFloor, l.pendLast = floor, last
}

// run attempts the ready keys of endpoint ep, one after another as the
// endpoint admits them, until none is ready.
func (l *lane) run(ctx context.Context, gen uint64, ep string) {
	for {
		l.mu.Lock()
		q := l.ready[ep]
		if gen != l.gen || ctx.Err() != nil || len(q) == 0 {
			if gen == l.gen {
				delete(l.running, ep)
				delete(l.ready, ep)
			}
			l.mu.Unlock()
			return
		}
		k := q[0]
		l.ready[ep] = q[1:]
		cur := k.cur
		l.mu.Unlock()
		l.attempt(ctx, gen, k, cur)
	}
}

// attempt admits k's entry cur at its endpoint and launches the attempt,
// or puts k back to wait for what keeps it from going. An entry past its
// endpoint's retry.max_age is dead-lettered as expired even while the
// endpoint does not admit it (disabled, breaker open).
func (l *lane) attempt(ctx context.Context, gen uint64, k *laneKey, cur *laneEntry) {
	d := l.d
	e := d.endpoint(k.id.ep)
	if e == nil {
		// Deleted (its entries were purged: the load finds none), or not
		// yet in this process's table.
		if _, err := l.load(ctx, cur); isNotFound(err) {
			l.finish(gen, k, cur, false)
			return
		}
		l.wait(gen, k, 5*time.Second, "")
		return
	}
	s := d.current(e)
	if d.now().Sub(cur.first) > s.ep.Retry.MaxAge && !cur.front {
		l.expire(ctx, gen, k, cur, e, s)
		return
	}
	if cause, until := d.blocked(e.id, d.now()); cause != "" {
		wait := time.Second
		if !until.IsZero() {
			wait = min(wait, until.Sub(d.now()))
		}
		l.wait(gen, k, wait, cause)
		return
	}
	if !e.slots.acquire(ctx, time.Second) {
		l.wait(gen, k, 0, "")
		return
	}
	adm, cause := d.admitHolding(e, s)
	if cause != "" {
		l.wait(gen, k, 100*time.Millisecond, cause)
		return
	}
	// Reading the entry is a round trip: it goes with the attempt, on a
	// goroutine of its own (as many as the endpoint's in-flight slots), so
	// the runner admits the next key meanwhile.
	d.inflight.Add(1)
	go func() {
		defer d.inflight.Done()
		dl, err := l.delivery(ctx, gen, k, cur, e, s)
		if dl == nil {
			adm.release()
			l.cannotLoad(gen, k, cur, err)
			return
		}
		d.launch(ctx, dl, adm, true)
	}()
}

// load reads cur's message from the stream.
func (l *lane) load(ctx context.Context, cur *laneEntry) (*natsjs.RawStreamMsg, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return l.stream().GetMsg(ctx, cur.seq)
}

// entryMsg is cur's message: kept in memory, or read from the stream.
func (l *lane) entryMsg(ctx context.Context, cur *laneEntry) (*keptMsg, error) {
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
	return &keptMsg{hdr: raw.Header, data: raw.Data, at: raw.Time}, nil
}

// delivery reads cur and makes it e's delivery, settled through the lane;
// nil with the error when it cannot be read, or (nil error) when it is
// settled without an attempt: an earlier incarnation's, or one the ledger
// says this process delivered.
func (l *lane) delivery(ctx context.Context, gen uint64, k *laneKey, cur *laneEntry, e *endpoint, s *settings) (*delivery, error) {
	msg, err := l.entryMsg(ctx, cur)
	if err != nil {
		return nil, err
	}
	ev, st := taskOf(msg.hdr, msg.at)
	if notForEndpoint(msg.hdr, &ev, s.ep) {
		l.d.log.Info("ordered entry discarded: stored for another endpoint with this id (deleted since), or an event of another tenant", "endpoint", e.id, "event_id", ev.id)
		return nil, nil
	}
	if !cur.front && !strings.HasPrefix(ev.key, redeliverKey) {
		// Delivered by this process before a crash that came before the
		// entry's deletion: settle it, as the fan-out would.
		if done, err := l.d.o.Ledger.Delivered(e.id, ev.id); err == nil && done {
			l.d.o.Metrics.Duplicates.WithLabelValues("delivered").Inc()
			return nil, nil
		}
	}
	dl := &delivery{e: e, s: s, ev: &ev, st: st, data: msg.data, hdr: msg.hdr}
	dl.done = func(ok bool) { l.done(gen, k, cur, dl, ok) }
	dl.again = func(wait time.Duration) { l.again(gen, k, cur, dl, wait) }
	return dl, nil
}

// cannotLoad puts k back after delivery did not make cur a delivery: gone
// (settled by an earlier term), or settled without an attempt (err nil),
// moves on.
func (l *lane) cannotLoad(gen uint64, k *laneKey, cur *laneEntry, err error) {
	switch {
	case err == nil:
		l.finish(gen, k, cur, true)
	case isNotFound(err):
		l.finish(gen, k, cur, false)
	default:
		l.wait(gen, k, time.Second, "")
	}
}

// expire dead-letters cur, past retry.max_age, without an attempt.
func (l *lane) expire(ctx context.Context, gen uint64, k *laneKey, cur *laneEntry, e *endpoint, s *settings) {
	dl, err := l.delivery(ctx, gen, k, cur, e, s)
	if dl == nil {
		l.cannotLoad(gen, k, cur, err)
		return
	}
	dl.st.Error = fmt.Sprintf("not delivered within retry.max_age (%s)", s.ep.Retry.MaxAge)
	l.d.deadLetter(dl, "expired")
}

// stream is HOOKJET_ORDERED's handle.
func (l *lane) stream() natsjs.Stream {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.st
}

// wait puts k back: it is looked at again after wait, and why says why it
// waits ("": not held, only delayed).
func (l *lane) wait(gen uint64, k *laneKey, wait time.Duration, why string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	k.busy, k.cur = false, nil
	if why != "" {
		l.setWhy(k, why, l.d.now())
	}
	if wait <= 0 {
		l.consider(k)
		return
	}
	l.lookAt(k, l.d.now().Add(wait))
}

// finish takes cur out of k and lets k's next entry go: once cur's entry
// is removed from the stream when del (lane_remove.go), at once otherwise.
func (l *lane) finish(gen uint64, k *laneKey, cur *laneEntry, del bool) {
	l.mu.Lock()
	if gen != l.gen {
		l.mu.Unlock()
		// An earlier term's: its entry is removed all the same.
		if del {
			l.deleteStale(cur.seq, "settled")
		}
		return
	}
	defer l.mu.Unlock()
	l.unfile(k, cur)
	if del {
		// With no other key of the endpoint ready, k's turn would wait
		// for nothing: its entry is deleted at once.
		l.removeLater(laneRemoval{seq: cur.seq, at: time.Now(), k: k, gen: gen, urgent: len(l.ready[k.id.ep]) == 0})
		return
	}
	l.next(k)
}

// deleteStale removes entry seq, settled (what) in a term that has ended,
// at once: the next owner's feed reads the stream, and would deliver it
// again.
func (l *lane) deleteStale(seq uint64, what string) {
	if err := deleteEntry(l.d.sendCtx, l.stream(), seq); err != nil {
		l.d.log.Warn("delete a "+what+" ordered entry of an ended term", "seq", seq, "err", err)
	}
}

// next lets k's next entry go, its current one settled and removed. l.mu is
// held.
func (l *lane) next(k *laneKey) {
	k.busy, k.cur = false, nil
	if len(k.entries) == 0 || k.entries[0].tries == 0 {
		l.setWhy(k, "", time.Time{})
	}
	l.consider(k)
}

// done settles an attempt of k's entry cur: delivered or dead-lettered
// (ok), or to come back (a NATS failure, a shutdown).
func (l *lane) done(gen uint64, k *laneKey, cur *laneEntry, dl *delivery, ok bool) {
	d := l.d
	// Its own goroutine, not a job: done runs in the ledger's callback,
	// which must not wait for the job pool. Bounded by the requests in
	// flight.
	d.inflight.Add(1)
	go func() {
		defer d.inflight.Done()
		if !ok {
			l.wait(gen, k, 2*time.Second+jitter(3*time.Second), "")
			return
		}
		if dl.dead && dl.s.ep.HoldsOnDeadLetter() {
			seq, err := l.holdKey(gen, k, dl)
			if err != nil {
				dl.log(d.log, slog.LevelWarn, "hold marker not stored; the dead letter comes again", "err", err)
				l.wait(gen, k, 2*time.Second, "")
				return
			}
			l.moveBehind(gen, k, seq)
		}
		l.finish(gen, k, cur, true)
	}()
}

// holdKey stores the marker that holds k after dl's dead letter, before dl's
// entry is deleted, and returns its sequence.
func (l *lane) holdKey(gen uint64, k *laneKey, dl *delivery) (uint64, error) {
	d := l.d
	m := nats.NewMsg(jetstream.LanePrefix + dl.e.id)
	m.Header.Set(jetstream.HdrMsgID, "ord-hold-"+dl.e.id+"-"+dl.ev.key)
	m.Header.Set(jetstream.HdrEndpoint, dl.e.id)
	m.Header.Set(jetstream.HdrOrderingKey, k.id.key)
	m.Header.Set(jetstream.HdrEventID, dl.ev.id)
	m.Header.Set(hdrLaneHold, dl.ev.id)
	m.Header.Set(jetstream.HdrAttempts, fmt.Sprint(dl.st.Attempts)) // the held key's view shows them
	ctx, cancel := context.WithTimeout(d.sendCtx, 5*time.Second)
	defer cancel()
	ack, err := d.o.JS.PublishMsg(ctx, m)
	if err != nil {
		return 0, err
	}
	e, _ := entryOf(ack.Sequence, m.Header, d.now())
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen {
		if ack.Sequence > l.read {
			l.own[ack.Sequence] = struct{}{}
		}
		l.file(k, &e)
	}
	return ack.Sequence, nil
}

// again stores k's entry cur again with dl's attempt state, due after wait,
// and deletes the old one: the key waits for it.
func (l *lane) again(gen uint64, k *laneKey, cur *laneEntry, dl *delivery, wait time.Duration) {
	d := l.d
	if forgotten(dl) {
		return
	}
	at := d.now().Add(wait)
	m := laneMsg(dl, at)
	if cur.front {
		m.Header.Set(hdrLaneFront, "1")
		m.Header.Set(hdrLaneOrder, strconv.FormatUint(cur.order, 10))
	}
	ctx, cancel := context.WithTimeout(d.sendCtx, 5*time.Second)
	ack, err := d.o.JS.PublishMsg(ctx, m)
	cancel()
	if err != nil {
		dl.log(d.log, slog.LevelWarn, "ordered retry not stored; the attempt comes again", "err", err)
		dl.done(false)
		return
	}
	e, _ := entryOf(ack.Sequence, m.Header, d.now())
	if !cur.front {
		e.first = cur.first
	}
	e.msg = keptMsgOf(m.Header, m.Data, d.now())
	e.size = int64(e.msg.size)
	l.mu.Lock()
	stale := gen != l.gen
	if !stale {
		if ack.Sequence > l.read {
			l.own[ack.Sequence] = struct{}{}
		}
		l.unfile(k, cur)
		l.file(k, &e)
		// The key waits for the new entry, not for this; deleted at once
		// unless a purge covers it, so that the endpoint's entries in the
		// stream stay within its bounds (lane_bound.go).
		l.removeLater(laneRemoval{seq: cur.seq, at: time.Now(), urgent: true, of: k})
	}
	l.mu.Unlock()
	if stale {
		l.deleteStale(cur.seq, "retried")
	} else {
		l.moveBehind(gen, k, ack.Sequence)
	}
	l.wait(gen, k, wait, "retrying")
	dl.log(d.log, slog.LevelInfo, "delivery failed; retrying in its key's turn", "attempt", dl.st.Attempts, "status", dl.st.Status, "error", dl.st.Error, "retry_in", wait.Round(time.Millisecond), "retry_at", at.UTC().Format(time.RFC3339Nano))
}

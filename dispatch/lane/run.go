package lane

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/jetstream"
)

// runner attempts keys' first entries, one endpoint's ready keys after
// another as the endpoint admits them (a goroutine per endpoint with some),
// through the Engine, and settles them: the next entry of a key goes once
// the settled one is removed from the stream, a failed one is stored again
// for its retry, a dead letter that holds its key leaves a hold marker. Its
// own type: the ready queues are its state alone; it works under its
// Owner's lock (a method's doc says when it must be held).
type runner struct {
	l *Owner
	// ready are the keys whose first entry may go now, per endpoint, in
	// the order they became ready; a runner per endpoint with some.
	ready   map[string][]*laneKey
	running map[string]bool
}

// lookAt considers k again at at.
func (x *runner) lookAt(k *laneKey, at time.Time) {
	l := x.l
	if k.timer != nil {
		k.timer.Stop()
	}
	gen := l.gen
	k.timer = time.AfterFunc(max(0, at.Sub(l.now())), func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if gen == l.gen && l.keys[k.id] == k {
			k.timer = nil
			l.consider(k)
		}
	})
}

// run attempts the ready keys of endpoint ep, one after another as the
// endpoint admits them, until none is ready.
func (x *runner) run(ctx context.Context, gen uint64, ep string) {
	l := x.l
	for {
		l.mu.Lock()
		q := x.ready[ep]
		if gen != l.gen || ctx.Err() != nil || len(q) == 0 {
			if gen == l.gen {
				delete(x.running, ep)
				delete(x.ready, ep)
			}
			l.mu.Unlock()
			return
		}
		k := q[0]
		x.ready[ep] = q[1:]
		cur := k.cur
		l.mu.Unlock()
		x.attempt(ctx, gen, k, cur)
	}
}

// attempt hands k's entry cur to the engine to admit and attempt, or puts
// k back to wait for what keeps it from going (the engine says what). An
// entry past its endpoint's retry.max_age is dead-lettered as expired even
// while the endpoint does not admit it (disabled, breaker open).
func (x *runner) attempt(ctx context.Context, gen uint64, k *laneKey, cur *laneEntry) {
	l := x.l
	v := l.eng.Attempt(ctx, Attempt{
		Endpoint:  k.id.ep,
		Published: cur.first,
		Front:     cur.front,
		Load: func(ctx context.Context) (Msg, error) {
			m, err := l.entryMsg(ctx, cur)
			if err != nil {
				return Msg{}, err
			}
			return m.Msg, nil
		},
		Settle: Settle{
			Done:  func(o Outcome) { x.done(gen, k, cur, o) },
			Retry: func(r Retry) error { return x.again(gen, k, cur, r) },
			Skip:  func(err error) { x.cannotLoad(gen, k, cur, err) },
		},
	})
	switch {
	case v.Started:
	case v.Gone:
		// Deleted (its entries were purged: the load finds none), or not
		// yet in this process's table.
		if _, err := l.load(ctx, cur); isNotFound(err) {
			x.finish(gen, k, cur, false)
			return
		}
		x.wait(gen, k, 5*time.Second, "")
	default:
		x.wait(gen, k, v.Wait, v.Why)
	}
}

// cannotLoad puts k back after the engine did not attempt cur: gone
// (settled by an earlier term), or settled without an attempt (err nil),
// moves on.
func (x *runner) cannotLoad(gen uint64, k *laneKey, cur *laneEntry, err error) {
	switch {
	case err == nil:
		x.finish(gen, k, cur, true)
	case isNotFound(err):
		x.finish(gen, k, cur, false)
	default:
		x.wait(gen, k, time.Second, "")
	}
}

// wait puts k back: it is looked at again after wait, and why says why it
// waits ("": not held, only delayed).
func (x *runner) wait(gen uint64, k *laneKey, wait time.Duration, why string) {
	l := x.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen != l.gen {
		return
	}
	k.busy, k.cur = false, nil
	if why != "" {
		l.setWhy(k, why, l.now())
	}
	if wait <= 0 {
		l.consider(k)
		return
	}
	x.lookAt(k, l.now().Add(wait))
}

// finish takes cur out of k and lets k's next entry go: once cur's entry
// is removed from the stream when del (remove.go), at once otherwise.
func (x *runner) finish(gen uint64, k *laneKey, cur *laneEntry, del bool) {
	l := x.l
	l.mu.Lock()
	if gen != l.gen {
		l.mu.Unlock()
		// An earlier term's: its entry is removed all the same.
		if del {
			x.deleteStale(cur.seq, "settled")
		}
		return
	}
	defer l.mu.Unlock()
	l.unfile(k, cur)
	if del {
		// With no other key of the endpoint ready, k's turn would wait
		// for nothing: its entry is deleted at once.
		l.rm.removeLater(laneRemoval{seq: cur.seq, at: time.Now(), k: k, gen: gen, urgent: len(x.ready[k.id.ep]) == 0})
		return
	}
	x.next(k)
}

// deleteStale removes entry seq, settled (what) in a term that has ended,
// at once: the next owner's feed reads the stream, and would deliver it
// again.
func (x *runner) deleteStale(seq uint64, what string) {
	l := x.l
	if err := deleteEntry(l.o.Sends, l.stream(), seq); err != nil {
		l.log.Warn("delete a "+what+" ordered entry of an ended term", "seq", seq, "err", err)
	}
}

// next lets k's next entry go, its current one settled and removed. l.mu is
// held.
func (x *runner) next(k *laneKey) {
	l := x.l
	k.busy, k.cur = false, nil
	if len(k.entries) == 0 || k.entries[0].tries == 0 {
		l.setWhy(k, "", time.Time{})
	}
	l.consider(k)
}

// done settles an attempt of k's entry cur: delivered or dead-lettered
// (o.OK), or to come back (a NATS failure, a shutdown).
func (x *runner) done(gen uint64, k *laneKey, cur *laneEntry, o Outcome) {
	l := x.l
	// Its own goroutine, not a job: done runs in the ledger's callback,
	// which must not wait for the job pool. Bounded by the requests in
	// flight.
	l.eng.Go(func() {
		if !o.OK {
			x.wait(gen, k, 2*time.Second+backoff.Jitter(3*time.Second), "")
			return
		}
		if o.Hold != nil {
			seq, err := x.holdKey(gen, k, *o.Hold)
			if err != nil {
				if o.Log != nil {
					o.Log(slog.LevelWarn, "hold marker not stored; the dead letter comes again", "err", err)
				}
				x.wait(gen, k, 2*time.Second, "")
				return
			}
			l.mv.moveBehind(gen, k, seq)
		}
		x.finish(gen, k, cur, true)
	})
}

// holdKey stores the marker that holds k after its dead letter h, before
// the dead letter's entry is deleted, and returns its sequence.
func (x *runner) holdKey(gen uint64, k *laneKey, h Hold) (uint64, error) {
	l := x.l
	m := nats.NewMsg(jetstream.LanePrefix + k.id.ep)
	m.Header.Set(jetstream.HdrMsgID, "ord-hold-"+k.id.ep+"-"+h.EventKey)
	m.Header.Set(jetstream.HdrEndpoint, k.id.ep)
	m.Header.Set(jetstream.HdrOrderingKey, k.id.key)
	m.Header.Set(jetstream.HdrEventID, h.EventID)
	m.Header.Set(hdrLaneHold, h.EventID)
	m.Header.Set(jetstream.HdrAttempts, fmt.Sprint(h.Attempts)) // the held key's view shows them
	ctx, cancel := context.WithTimeout(l.o.Sends, 5*time.Second)
	defer cancel()
	ack, err := l.o.JS.PublishMsg(ctx, m)
	if err != nil {
		return 0, err
	}
	e, _ := entryOf(ack.Sequence, m.Header, l.now())
	l.mu.Lock()
	defer l.mu.Unlock()
	if gen == l.gen {
		if ack.Sequence > l.gate.read {
			l.own[ack.Sequence] = struct{}{}
		}
		l.file(k, &e)
	}
	return ack.Sequence, nil
}

// again stores k's entry cur again as r.Msg, with the attempt's state, due
// after r.Wait, and deletes the old one: the key waits for it. An error:
// not stored (the engine settles the attempt to come back).
func (x *runner) again(gen uint64, k *laneKey, cur *laneEntry, r Retry) error {
	l := x.l
	m := r.Msg
	if cur.front {
		m.Header.Set(hdrLaneFront, "1")
		m.Header.Set(hdrLaneOrder, strconv.FormatUint(cur.order, 10))
	}
	ctx, cancel := context.WithTimeout(l.o.Sends, 5*time.Second)
	ack, err := l.o.JS.PublishMsg(ctx, m)
	cancel()
	if err != nil {
		return err
	}
	e, _ := entryOf(ack.Sequence, m.Header, l.now())
	if !cur.front {
		e.first = cur.first
	}
	e.msg = keptMsgOf(m.Header, m.Data, l.now())
	e.size = int64(e.msg.size)
	l.mu.Lock()
	stale := gen != l.gen
	if !stale {
		if ack.Sequence > l.gate.read {
			l.own[ack.Sequence] = struct{}{}
		}
		l.unfile(k, cur)
		l.file(k, &e)
		// The key waits for the new entry, not for this; deleted at once
		// unless a purge covers it, so that the endpoint's entries in the
		// stream stay within its bounds (bound.go).
		l.rm.removeLater(laneRemoval{seq: cur.seq, at: time.Now(), urgent: true, of: k})
	}
	l.mu.Unlock()
	if stale {
		x.deleteStale(cur.seq, "retried")
	} else {
		l.mv.moveBehind(gen, k, ack.Sequence)
	}
	x.wait(gen, k, r.Wait, "retrying")
	return nil
}

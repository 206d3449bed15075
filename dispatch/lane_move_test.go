package dispatch

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// laneState reads HOOKJET_ORDERED's state.
func (r *rig) laneState() natsjs.StreamState {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := r.node.JetStream().Stream(ctx, jetstream.LaneStream)
	if err != nil {
		r.t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	return info.State
}

// A retrying key's waiting entries are moved behind its retry, so the
// others' settled entries leave the lane by purge, not one tombstone each:
// while k0 fails, the lane holds k0's entries and hardly any deleted
// sequence between them (without the move: the 190 entries of the other
// keys settled after k0-1, each a tombstone above k0-1's entry).
func TestRetryingKeyLetsThePurgePass(t *testing.T) {
	rcv := newReceiver(t)
	ep := orderedTo("ord", rcv, "")
	ep.Retry.MaxAttempts = 1000
	r := newRig(t, []config.Endpoint{ep}, nil)
	failing := failKey(rcv, "k0")
	const keys, per = 20, 10
	want := r.publishKeys(keys, per)
	eventually(t, "the other keys delivered", 20*time.Second, func() bool {
		return len(rcv.delivered()) == (keys-1)*per
	})
	var s natsjs.StreamState
	eventually(t, "the lane down to k0's entries", 10*time.Second, func() bool {
		s = r.laneState()
		return s.Msgs <= per+1 && s.NumDeleted <= 2*per
	})
	t.Logf("while k0 fails: %d entries, first %d, last %d, %d deleted between", s.Msgs, s.FirstSeq, s.LastSeq, s.NumDeleted)
	if got := rcv.requests("ord", "k0-1"); got != 0 {
		t.Fatalf("k0-1 attempted %d times while k0-0 had not been delivered", got)
	}
	failing.Store(false)
	rcv.waitDelivered(want, 20*time.Second)
	inOrder(t, rcv.arrivals("ord"), keys, per)
	for i := range per {
		if n := rcv.requests("ord", fmt.Sprintf("k0-%d", i)); i > 0 && n != 1 {
			t.Errorf("k0-%d requested %d times, want once", i, n)
		}
	}
}

// A crash after a key's waiting entries were copied behind it, before the
// originals were removed, leaves both in the lane: the next owner files
// one of each and delivers every event once, in order.
func TestMovedCopiesAndTheirOriginalsDeliverOnce(t *testing.T) {
	rcv := newReceiver(t)
	node, cfg := sharedNode(t)
	ep := orderedTo("ord", rcv, "")
	ep.Events = []string{"order.>"}
	js := node.JetStream()
	ctx := ctx5(t)
	const per = 5
	var originals []*nats.Msg
	for i := range per {
		id := fmt.Sprintf("k0-%d", i)
		m := nats.NewMsg(jetstream.LanePrefix + "ord")
		m.Header.Set(jetstream.HdrMsgID, "ord-ord-"+id+"-0")
		m.Header.Set(jetstream.HdrEndpoint, "ord")
		m.Header.Set(jetstream.HdrOrderingKey, "k0")
		m.Header.Set(jetstream.HdrEventID, id)
		m.Header.Set(jetstream.HdrEventType, "order.updated")
		m.Header.Set(jetstream.HdrEventSeq, fmt.Sprint(i+1))
		m.Header.Set(jetstream.HdrEventKey, id)
		m.Header.Set(jetstream.HdrPublished, time.Now().UTC().Format(time.RFC3339Nano))
		m.Data = []byte(`{"id":"` + id + `"}`)
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
		originals = append(originals, m)
	}
	// The copies of k0-1.. stored behind a retry of k0-0, as moveBehind
	// stores them.
	for i, m := range originals[1:] {
		c := nats.NewMsg(m.Subject)
		c.Header = nats.Header(http.Header(m.Header).Clone())
		c.Header.Set(jetstream.HdrMsgID, fmt.Sprintf("ord-mv-%d", i+2))
		c.Header.Set("Hookjet-Ordered-Moved", fmt.Sprint(i+2)) // the lane's mark of a copy (lane/move.go)
		c.Data = m.Data
		if _, err := js.PublishMsg(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	// The fan-out's ack floor must pass the events' sequences: they are
	// published as events too.
	for i := range per {
		msg := nats.NewMsg(jetstream.EventsPrefix + "other.type")
		msg.Header.Set(jetstream.HdrMsgID, fmt.Sprintf("filler-%d", i))
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	sharing(t, node, cfg, []config.Endpoint{ep})
	var want []string
	for i := range per {
		want = append(want, fmt.Sprintf("ord k0-%d", i))
	}
	rcv.waitDelivered(want, 20*time.Second)
	time.Sleep(time.Second)
	inOrder(t, rcv.arrivals("ord"), 1, per)
	for i := range per {
		if n := rcv.requests("ord", fmt.Sprintf("k0-%d", i)); n != 1 {
			t.Errorf("k0-%d requested %d times, want once", i, n)
		}
	}
}

// A key held by its dead letter (ordering_on_dead_letter: hold) is moved
// behind the others too, hold marker and all, so the purge passes it for
// as long as it is held; the replay still goes first, then the key's
// events in order. A moved marker keeps the time the key was first held.
func TestHeldKeyLetsThePurgePass(t *testing.T) {
	rcv := newReceiver(t)
	r := newRig(t, []config.Endpoint{orderedTo("ord", rcv, "hold")}, nil)
	var refuse atomic.Bool
	refuse.Store(true)
	rcv.setAnswer(func(_, id string, _ int) (int, http.Header) {
		if id == "k0-0" && refuse.Load() {
			return http.StatusBadRequest, nil // permanent: dead-lettered at once
		}
		return http.StatusNoContent, nil
	})
	const keys, per = 20, 10
	want := r.publishKeys(keys, per)
	eventually(t, "the other keys delivered", 20*time.Second, func() bool {
		return len(rcv.delivered()) == (keys-1)*per
	})
	var s natsjs.StreamState
	eventually(t, "the lane down to k0's marker and entries", 10*time.Second, func() bool {
		s = r.laneState()
		return s.Msgs <= per+1 && s.NumDeleted <= 2*per
	})
	t.Logf("while k0 is held: %d entries, first %d, last %d, %d deleted between", s.Msgs, s.FirstSeq, s.LastSeq, s.NumDeleted)
	if h := r.d.lane.Held("ord"); h == nil || h.Why["dead_letter"] != 1 {
		t.Fatalf("held keys %+v, want k0 held by its dead letter", h)
	}
	refuse.Store(false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.d.Queries().Replay(ctx, api.ReplayRequest{Endpoint: "ord", IDs: []string{"k0-0"}}); err != nil {
		t.Fatal(err)
	}
	rcv.waitDelivered(want, 20*time.Second)
	inOrder(t, rcv.arrivals("ord"), keys, per)
}

package lane

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/jetstream"
)

func TestMovedHoldMarkerKeepsItsTime(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	h := nats.Header{}
	h.Set(hdrLaneHold, "k0-0")
	h.Set(jetstream.HdrOrderingKey, "k0")
	h.Set(hdrLaneMoved, "7")
	h.Set(hdrLaneSince, since.Format(time.RFC3339Nano))
	e, key := entryOf(42, h, time.Now())
	if !e.hold || !e.front || e.order != 42 || key != "k0" || !e.first.Equal(since) {
		t.Errorf("moved marker read as %+v (key %q), want a hold at 42 held since %s", e, key, since)
	}
}

// ProbeLaneIdle: the barrier's "read up to last" is taken from two quiet
// periods of the feed (laneIdle, 100 ms each), not from having read up to
// last. With the feed stalled (an ordered consumer being recreated after a
// reconnect or leader change), a key's later event goes before its earlier
// event's entry has even been read. Driven here at the lane's state
// machine, as the feed and floor poller call it.
func TestProbeLaneIdleAppliesFloorBeforeEntryIsRead(t *testing.T) {
	l := New(noEngine{}, Options{})
	l.owner, l.gen = true, 1
	l.rn.running["ep"] = true // no runner goroutine: the ready queue shows what would go
	entry := func(evSeq uint64, id string) nats.Header {
		h := nats.Header{}
		h.Set(jetstream.HdrEndpoint, "ep")
		h.Set(jetstream.HdrOrderingKey, "k")
		h.Set(jetstream.HdrEventID, id)
		h.Set(jetstream.HdrEventSeq, strconv.FormatUint(evSeq, 10))
		h.Set(jetstream.HdrPublished, time.Now().UTC().Format(time.RFC3339Nano))
		return h
	}
	// Events E1 (seq 10) and E2 (seq 11) of key k; two fan-out workers
	// append E2's entry (lane seq 100) before E1's (lane seq 101).
	l.take(1, 100, entry(11, "E2"), []byte("{}"), time.Now())
	// The poller reads the ack floor 11 (both acked) and the lane's last
	// sequence 101: the floor waits until the feed has read 101.
	l.offerFloor(1, 11, 101)
	if len(l.rn.ready["ep"]) != 0 {
		t.Fatal("E2 ready before the floor applied")
	}
	// The feed hands nothing over for two waits of laneIdle (stalled):
	// the server, asked, says the feed has not caught up (its ordered
	// consumer is being created again; jetstream's
	// TestReadLaneNotCaughtUpWhileConsumerIsRecreated drives the real one).
	stalled := func() bool { return false }
	l.idle(1, stalled)
	l.idle(1, stalled)
	l.mu.Lock()
	defer l.mu.Unlock()
	if q := l.rn.ready["ep"]; len(q) > 0 && q[0].cur != nil && q[0].cur.id == "E2" {
		t.Errorf("E2 (event seq 11) is ready to be attempted while E1's entry (lane seq 101, event seq 10) was never read: floor %d applied with read %d, fed %d; E2 is delivered before E1", l.gate.floor, l.gate.read, l.rm.fed)
	}
}

// noEngine is an engine with no endpoints, for the lane's state machine
// driven alone.
type noEngine struct{}

func (noEngine) Attempt(context.Context, Attempt) Verdict            { return Verdict{Gone: true} }
func (noEngine) Overflow(_ string, _ Msg, _ string, done func(bool)) { done(false) }
func (noEngine) MaxBacklog(string) (int, bool)                       { return 0, false }
func (noEngine) LastSuccess(string) time.Time                        { return time.Time{} }
func (noEngine) AckFloor(context.Context) (uint64, error)            { return 0, nil }
func (noEngine) Label(ep string) string                              { return ep }
func (noEngine) Go(f func())                                         { go f() }

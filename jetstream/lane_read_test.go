package jetstream

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// TestReadLaneNotCaughtUpWhileConsumerIsRecreated: the lane's feed asks the
// server whether it has handed over every entry before the ordering
// barrier counts silence as "everything read". While its ordered consumer
// is gone (deleted here, as after a reconnect or a leader change) and an
// entry waits, the answer is no, however long the silence; once the entry
// is handed over by the recreated consumer, it is yes again.
func TestReadLaneNotCaughtUpWhileConsumerIsRecreated(t *testing.T) {
	js := startSeenJS(t, 0)
	ctx, cancel := context.WithCancel(t.Context())
	publish := func(id string) uint64 {
		t.Helper()
		m := nats.NewMsg(LanePrefix + "ep")
		m.Header.Set(HdrEventID, id)
		ack, err := js.PublishMsg(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	publish("a")
	var handed, bSeq atomic.Uint64
	var bPublished, caughtAfterA, violated atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ReadLane(ctx, js, 1, 50*time.Millisecond, func(_ natsjs.Msg, meta *natsjs.MsgMetadata) error {
			handed.Store(meta.Sequence.Stream)
			return nil
		}, func(caughtUp func() bool) {
			waiting := bPublished.Load() && handed.Load() < bSeq.Load()
			up := caughtUp()
			if up && handed.Load() == 1 {
				caughtAfterA.Store(true)
			}
			if waiting && up && handed.Load() < bSeq.Load() {
				violated.Store(true)
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	checkFor(t, 10*time.Second, func() bool { return caughtAfterA.Load() }, "the feed caught up after reading entry a")

	// The server-side consumer goes; an entry is stored meanwhile.
	st, err := js.Stream(ctx, LaneStream)
	if err != nil {
		t.Fatal(err)
	}
	for name := range st.ListConsumers(ctx).Info() {
		if err := st.DeleteConsumer(ctx, name.Name); err != nil {
			t.Fatal(err)
		}
	}
	bSeq.Store(publish("b"))
	bPublished.Store(true)
	checkFor(t, 30*time.Second, func() bool { return handed.Load() >= bSeq.Load() }, "the recreated consumer handed over entry b")
	if violated.Load() {
		t.Error("the feed was reported caught up while entry b, stored after its consumer was deleted, was not handed over")
	}
}

// TestHandedAllAsksTheConsumer drives the question behind caughtUp step by
// step with a real ordered consumer: messages delivered but not handed
// over, messages stored and not delivered, and a consumer deleted and
// created again each say "not caught up".
func TestHandedAllAsksTheConsumer(t *testing.T) {
	js := startSeenJS(t, 0)
	ctx := t.Context()
	publish := func() {
		t.Helper()
		if _, err := js.Publish(ctx, LanePrefix+"ep", nil); err != nil {
			t.Fatal(err)
		}
	}
	cons, err := js.OrderedConsumer(ctx, LaneStream, natsjs.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	var h handed
	fetch := func(n int) {
		t.Helper()
		b, err := cons.Fetch(n, natsjs.FetchMaxWait(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for m := range b.Messages() {
			meta, err := m.Metadata()
			if err != nil {
				t.Fatal(err)
			}
			h = handed{consumer: meta.Consumer, seq: meta.Sequence.Consumer}
			got++
		}
		if got != n {
			t.Fatalf("fetched %d messages, want %d (%v)", got, n, b.Error())
		}
	}
	if !h.all(ctx, cons) {
		t.Error("an empty lane, nothing delivered: not caught up")
	}
	publish()
	publish()
	if h.all(ctx, cons) {
		t.Error("two entries stored, none delivered: caught up")
	}
	fetch(1)
	if h.all(ctx, cons) {
		t.Error("one of two entries handed over: caught up")
	}
	fetch(1)
	if !h.all(ctx, cons) {
		t.Error("both entries handed over: not caught up")
	}
	st, err := js.Stream(ctx, LaneStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteConsumer(ctx, h.consumer); err != nil {
		t.Fatal(err)
	}
	publish()
	if h.all(ctx, cons) {
		t.Error("the consumer deleted and an entry stored since: caught up")
	}
	fetch(1) // the ordered consumer is created again from where it was
	if !h.all(ctx, cons) {
		t.Errorf("the entry handed over by the recreated consumer: not caught up")
	}
}

// checkFor polls cond every 20 ms until it holds, failing the test with
// what after timeout.
func checkFor(t *testing.T, timeout time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for: %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

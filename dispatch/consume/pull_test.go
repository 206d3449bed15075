package consume

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// The fan-out's pulls on a real server: a pull whose batch fills ends at
// once, one the server ends when its wait is up (408) gives back what it
// did not fill, and once every event is taken and acked nothing is held
// ahead, neither room nor bytes.
func TestFanoutPullerGivesBackWhatPullsDidNotFill(t *testing.T) {
	cfg := config.Default()
	node := startNode(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js := node.JetStream()
	if err := jetstream.EnsureStreams(ctx, js, &cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	cons, err := jetstream.EnsureFanoutConsumer(ctx, js, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	const events = 10
	for i := range events {
		msg := nats.NewMsg(jetstream.EventsPrefix + "order.created")
		msg.Header.Set(jetstream.HdrMsgID, "evt_"+strconv.Itoa(i))
		msg.Data = []byte(`{"n":` + strconv.Itoa(i) + `}`)
		if _, err := js.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}

	ahead := newAheadQueue(int64(jetstream.MaxMsgSize(&cfg)))
	info := cons.CachedInfo()
	p := newPuller(js.Conn(), info.Stream, info.Name, ahead)
	failed := make(chan error, 4)
	var recv sync.WaitGroup
	listen, stop := context.WithCancel(ctx)
	recv.Go(func() {
		if err := p.receive(ctx, listen, failed, func(string, ...any) {}); err != nil {
			t.Errorf("receive: %v", err)
		}
	})
	defer func() {
		stop()
		recv.Wait()
	}()
	limit := ahead.pullBytes.Load()
	for _, n := range []int{4, 1024} {
		if ok, err := ahead.take(ctx, n, failed); !ok {
			t.Fatalf("take room for %d: %v", n, err)
		}
		if !ahead.bytes.Acquire(ctx, limit) {
			t.Fatal("byte budget")
		}
		if err := p.request(n, limit); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for range events {
		select {
		case ev := <-ahead.queue:
			ahead.took(ev)
			seen[ev.Msg.Headers().Get(jetstream.HdrMsgID)] = true
			if err := ev.Msg.Ack(); err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d events received", len(seen), events)
		}
	}
	if len(seen) != events {
		t.Fatalf("received %d distinct events, want %d", len(seen), events)
	}
	// The first pull's batch filled: it ended at once. The second waits
	// at the server until fanoutWait is up.
	if n := p.openCount(); n != 1 {
		t.Fatalf("%d pulls open after the first filled, want 1", n)
	}
	deadline := time.Now().Add(fanoutWait + 5*time.Second)
	for p.openCount() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the server never ended the second pull")
		}
		time.Sleep(20 * time.Millisecond)
	}
	ahead.mu.Lock()
	held := ahead.held
	ahead.mu.Unlock()
	ahead.bytes.mu.Lock()
	used := ahead.bytes.used
	ahead.bytes.mu.Unlock()
	if held != 0 || used != 0 {
		t.Fatalf("held ahead after every event was taken: %d events of room, %d bytes; want 0 and 0", held, used)
	}
	select {
	case err := <-failed:
		t.Fatalf("a pull failed: %v", err)
	default:
	}
}

// startNode starts an embedded nats-server with JetStream in a temporary
// directory, stopped when the test ends.
func startNode(t *testing.T) *jetstream.Node {
	t.Helper()
	cfg := config.Default()
	cfg.NATS.Listen = "127.0.0.1:-1"
	node, err := jetstream.OpenNode(cfg.NATS, t.TempDir(), "consume-test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node.CloseConn(time.Second, slog.New(slog.DiscardHandler))
		node.Shutdown()
	})
	return node
}

package lane

import (
	"context"
	"log/slog"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// stalledKV is a real lease bucket whose updates hang until their context
// ends, as a request to a server that stopped answering does.
type stalledKV struct{ natsjs.KeyValue }

func (stalledKV) Update(ctx context.Context, _ string, _ []byte, _ uint64) (uint64, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestLeaseStopsBeforeATakeoverWhenRenewalsHang: an owner whose renewals
// hang (each request up to its 2 s timeout) stops delivering within
// leaseLost of its last renewal, before another process may take the lane
// over (leaseTakeover after it); it used to go on until a renewal
// returned more than leaseLost after the last, 5-7 s in.
func TestLeaseStopsBeforeATakeoverWhenRenewalsHang(t *testing.T) {
	js := startNode(t).JetStream()
	kv, err := js.KeyValue(t.Context(), jetstream.LaneBucket)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(t.Context(), leaseKey, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	renewed := time.Now()
	ls := Lease{l: New(noEngine{}, Options{}), kv: stalledKV{kv}, id: "a", owner: true, rev: rev, renewed: renewed}
	for ls.owner && time.Since(renewed) < 2*leaseTakeover {
		ls.step(t.Context()) // as runLease does, every leaseRenew
		if ls.owner {
			time.Sleep(min(leaseRenew, time.Until(renewed.Add(2*leaseTakeover))))
		}
	}
	stopped := time.Since(renewed)
	t.Logf("stopped delivering %s after the last renewal (lost after %s, taken over after %s)", stopped.Round(10*time.Millisecond), leaseLost, leaseTakeover)
	if ls.owner || stopped >= leaseTakeover {
		t.Errorf("an owner whose renewals hang still delivered %s after its last renewal: another process may take over after %s", stopped.Round(10*time.Millisecond), leaseTakeover)
	}
}

// startNode starts an embedded server with hookjet's streams.
func startNode(t *testing.T) *jetstream.Node {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.NATS.Listen = "127.0.0.1:-1"
	log := slog.New(slog.DiscardHandler)
	node, err := jetstream.OpenNode(cfg.NATS, cfg.DataDir, "lane-test", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node.CloseConn(time.Second, log)
		node.Shutdown()
	})
	if err := jetstream.EnsureStreams(t.Context(), node.JetStream(), &cfg, log); err != nil {
		t.Fatal(err)
	}
	return node
}

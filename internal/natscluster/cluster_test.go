package natscluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// startTestCluster builds bin/nats-server if needed and starts a cluster
// that the test's cleanup kills.
func startTestCluster(t *testing.T, o Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bin := filepath.Join("..", "..", "bin", "nats-server")
	if err := EnsureBinary(ctx, ".", bin, testWriter{t}); err != nil {
		t.Fatal(err)
	}
	o.Binary, o.Dir = bin, t.TempDir()
	c, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// publish publishes to an R3 stream, retrying with the same Nats-Msg-Id
// while the cluster elects a new leader.
func publish(ctx context.Context, js natsjs.JetStream, id string) error {
	var last error
	for range 100 {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, last = js.Publish(pctx, "t.x", []byte(id), natsjs.WithMsgID(id))
		cancel()
		if last == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("publish %s: %w", id, last)
}

func TestClusterSurvivesKillAndPauseOfANode(t *testing.T) {
	c := startTestCluster(t, Options{SyncInterval: "always"})
	if got := len(c.Nodes()); got != 3 {
		t.Fatalf("nodes: %d", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Short pings: a connection to a paused node is given up within a second,
	// as a producer that must keep publishing would configure it.
	nc, err := nats.Connect(c.URL(), nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond),
		nats.PingInterval(250*time.Millisecond), nats.MaxPingsOutstanding(2))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	n1 := c.Nodes()[0]
	if err := publish(ctx, js, "before"); err != nil {
		t.Fatal(err)
	}
	if err := n1.Kill(); err != nil {
		t.Fatal(err)
	}
	if n1.Running() {
		t.Fatal("n1 still running after Kill")
	}
	if err := publish(ctx, js, "while-n1-down"); err != nil {
		t.Fatal(err)
	}
	if err := n1.Start(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	n2 := c.Nodes()[1]
	if err := n2.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := publish(ctx, js, "while-n2-paused"); err != nil {
		t.Fatal(err)
	}
	if err := n2.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealthy(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	// The stream kept all three messages, and its replicas are current
	// again after the kill and the pause.
	var last string
	for range 100 {
		s, err := js.Stream(ctx, "T")
		if err != nil {
			last = err.Error()
			time.Sleep(100 * time.Millisecond)
			continue
		}
		info := s.CachedInfo()
		current := 0
		if info.Cluster != nil {
			for _, r := range info.Cluster.Replicas {
				if r.Current {
					current++
				}
			}
		}
		last = fmt.Sprintf("%d messages, %d current followers", info.State.Msgs, current)
		if info.State.Msgs == 3 && current == 2 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("stream T: %s, want 3 messages and 2 current followers", last)
}

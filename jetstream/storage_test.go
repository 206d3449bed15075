package jetstream

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// A NATS server with less storage than the streams reserve stops start-up
// at once with the keys to lower, instead of retrying until someone looks.
func TestEnsureStreamsRefusesAtOnceWhenNATSHasTooLittleStorage(t *testing.T) {
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: t.TempDir(), JetStreamMaxStore: 6 << 30,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	cfg := config.Default() // 8 GiB events, 8 GiB tasks, 1 GiB dead letters, 8 GiB log
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	err = EnsureStreams(ctx, js, &cfg, slog.New(slog.DiscardHandler))
	var refusal *RefusedError
	if !errors.As(err, &refusal) {
		t.Fatalf("EnsureStreams = %v, want a refusal", err)
	}
	if ctx.Err() != nil {
		t.Fatal("EnsureStreams retried until its deadline instead of refusing")
	}
	for _, want := range []string{"streams.max_bytes 8.0 GiB", "streams.tasks_max_bytes", "streams.dlq_max_bytes 1.0 GiB", "log.max_bytes 8.0 GiB", "dedupe.ttl", "data_dir"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}

	cfg.Streams.MaxBytes, cfg.Streams.TasksMaxBytes, cfg.Streams.DLQMaxBytes = 128<<20, 128<<20, 32<<20
	cfg.Log.MaxBytes = 64 << 20
	if err := EnsureStreams(ctx, js, &cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("EnsureStreams with limits that fit: %v", err)
	}
}

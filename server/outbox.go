package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookjet/hookjet/admin"
	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/outbox"
)

// startOutbox starts the outbox relay on nc with cfg.Outbox and returns it
// with the function that stops it (finishing the batch in flight) and waits
// for it. `hookjet outbox` and `hookjet serve` (when outbox.dsn is set) call
// it.
//
// hold is how long a row stays in the table after its PubAck
// ([outbox.WithHold]): the lazy sync interval of a server that can lose an
// acknowledged event to a power cut, else 0.
func startOutbox(ctx context.Context, cfg *config.Config, node *jetstream.Node, log *slog.Logger, reg prometheus.Registerer, hold time.Duration) (*outbox.Relay, func(), error) {
	pub, err := node.OutboxPublisherFor(cfg)
	if err != nil {
		return nil, nil, err
	}
	relay, err := outbox.New(cfg.Outbox, cfg.Security.MaxPayloadBytes, pub, outbox.WithLogger(log), outbox.WithRegisterer(reg), outbox.WithHold(hold))
	if err != nil {
		return nil, nil, err
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := relay.Run(rctx); err != nil {
			log.Error("outbox relay", "err", err)
		}
	}()
	log.Info("outbox relay started", "table", cfg.Outbox.Table, "batch", cfg.Outbox.Batch, "poll", cfg.Outbox.Poll, "hold", hold)
	var once sync.Once
	return relay, func() { once.Do(func() { cancel(); <-done }) }, nil
}

// RunRelay is the standalone outbox relay (`hookjet outbox`) until ctx is
// done: it connects to NATS (cfg.NATS), waits for the streams 'hookjet
// serve' creates, relays cfg.Outbox's table and, when ln is not nil,
// serves GET /metrics and /readyz on it. It finishes the batch in flight
// before it returns.
func RunRelay(ctx context.Context, cfg *config.Config, ln net.Listener, log *slog.Logger) error {
	if ln != nil {
		defer func() { _ = ln.Close() }() // already closed once served
	}
	node, err := jetstream.DialNode(ctx, cfg.NATS, "hookjet-outbox", log)
	if err != nil || node == nil {
		return err // nil: stopped before NATS came up
	}
	defer func() {
		if err := node.Drain(); err != nil {
			log.Debug("nats drain", "err", err)
		}
	}()
	node.AwaitOutboxStreams(ctx, log)
	reg := prometheus.NewRegistry()
	relay, stop, err := startOutbox(ctx, cfg, node, log, reg, relayHold(ctx, cfg, node, log))
	if err != nil {
		return err
	}
	defer stop()
	if ln != nil {
		defer serveRelayHTTP(ln, relay, reg, log)()
	}
	<-ctx.Done()
	log.Info("outbox relay stopping")
	return nil
}

// serveRelayHTTP serves /metrics and /readyz (200, or 503 naming what is
// down) on ln for a standalone relay, and returns the function that stops it.
func serveRelayHTTP(ln net.Listener, relay *outbox.Relay, g prometheus.Gatherer, log *slog.Logger) func() {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{}))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := relay.Ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("outbox http", "err", err)
		}
	}()
	log.Info("outbox relay http", "addr", "http://"+ln.Addr().String())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("outbox http shutdown", "err", err)
		}
		<-done
	}
}

// adminBackend is what the admin API reports: the delivery engine, plus the
// in-process outbox relay when one runs (its lag in the summary, its
// connections in /readyz).
type adminBackend struct {
	engine
	relay *outbox.Relay
}

func (s *Server) adminBackend() admin.Backend {
	if s.outbox == nil {
		return newEngine(s.disp)
	}
	return adminBackend{engine: newEngine(s.disp), relay: s.outbox}
}

// Ready is the engine's readiness, then the relay's.
func (b adminBackend) Ready(ctx context.Context) error {
	if err := b.engine.Ready(ctx); err != nil {
		return err
	}
	return b.relay.Ready() // "outbox: postgresql unavailable since …"
}

// Summary is the engine's summary with the relay's lag.
func (b adminBackend) Summary(ctx context.Context) (api.Summary, error) {
	sum, err := b.engine.Summary(ctx)
	lag := b.relay.Lag().Seconds()
	sum.OutboxLagSeconds = &lag
	return sum, err
}

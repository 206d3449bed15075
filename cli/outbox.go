package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookjet/hookjet/admin"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/outbox"
)

const outboxHelp = `hookjet outbox [--config FILE] [--listen ADDR]
hookjet outbox schema [--config FILE | --table NAME]

Relays committed rows of an application's PostgreSQL outbox table
(outbox.dsn, outbox.table, outbox.batch, outbox.poll) into JetStream:
claims a batch with FOR UPDATE SKIP LOCKED, publishes it to
hookjet.events.<event_type> with Nats-Msg-Id = the row id (in atomic
batches), deletes the rows after their PubAcks; when HOOKJET_EVENTS has one
replica on a server that syncs lazily or whose sync policy cannot be read,
only once the sync interval has passed since the PubAck. Wakes on LISTEN/NOTIFY, polls every outbox.poll. Rows
that can never be published go to HOOKJET_DLQ (hookjet.dlq._outbox, reason
rejected) and are deleted. Several relays may share a table.

NATS: nats.url when set; otherwise the embedded server of a 'hookjet serve'
using the same config, at nats.listen (with nats.token or nats.user and
nats.password). Start 'hookjet serve' first: the relay waits for its
streams. While PostgreSQL or NATS is down the relay backs off and logs it.
'hookjet serve' runs the same relay in-process when outbox.dsn is set.

'hookjet outbox schema' prints the table's DDL (table, index, NOTIFY
trigger; PostgreSQL 14 or later), with the ALTER TABLE that adds the
nullable tenant column (header Hookjet-Tenant) to an older table. SIGTERM/SIGINT finish the batch in flight
and exit 0.`

// runOutbox is `hookjet outbox`.
func runOutbox(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "schema" {
		return runOutboxSchema(args[1:], getenv, stdout, stderr)
	}
	fs := newFlags("outbox", outboxHelp, stdout)
	path := fs.String("config", getenv("HOOKJET_CONFIG"), "config file (YAML); empty: defaults and environment only")
	listen := fs.String("listen", "", "serve GET /metrics and /readyz on this address (e.g. 127.0.0.1:9091); empty: none")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("outbox: unknown command %q (want schema, or flags only)", fs.Arg(0))
	}
	cfg, err := loadConfig(*path, getenv)
	if err != nil {
		return err
	}
	if cfg.Outbox.DSN.IsZero() {
		return &config.FieldError{Key: "outbox.dsn", Err: errors.New("required to run the relay (postgres://..., env:NAME or file:/path)")}
	}
	if err := outbox.CheckDSN(cfg.Outbox.DSN); err != nil {
		return err
	}
	log := NewLogger(cfg.Log, stderr)
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
	if *listen != "" {
		stopHTTP, err := serveRelayHTTP(*listen, relay, reg, log)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	<-ctx.Done()
	log.Info("outbox relay stopping")
	return nil
}

func runOutboxSchema(args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("outbox schema", outboxHelp, stdout)
	path := fs.String("config", getenv("HOOKJET_CONFIG"), "config file whose outbox.table to use")
	table := fs.String("table", "", "table name (default outbox.table, hookjet_outbox)")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	name := *table
	if name == "" {
		cfg, err := loadConfig(*path, getenv)
		if err != nil {
			return err
		}
		name = cfg.Outbox.Table
	}
	ddl, err := outbox.Schema(name)
	if err != nil {
		return usagef("outbox schema: --table: %v", err)
	}
	_, err = io.WriteString(stdout, ddl)
	return err
}

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

// serveRelayHTTP serves /metrics and /readyz (200, or 503 naming what is
// down) for a standalone relay.
func serveRelayHTTP(addr string, relay *outbox.Relay, g prometheus.Gatherer, log *slog.Logger) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("outbox: --listen: %v", err)
	}
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
	}, nil
}

// adminBackend is what the admin API reports: the delivery engine, plus the
// in-process outbox relay when one runs (its lag in the summary, its
// connections in /readyz).
type adminBackend struct {
	*dispatch.Dispatcher
	relay *outbox.Relay
}

func (s *Server) adminBackend() admin.Backend {
	if s.outbox == nil {
		return s.disp
	}
	return adminBackend{Dispatcher: s.disp, relay: s.outbox}
}

// Ready is the engine's readiness, then the relay's.
func (b adminBackend) Ready(ctx context.Context) error {
	if err := b.Dispatcher.Ready(ctx); err != nil {
		return err
	}
	return b.relay.Ready() // "outbox: postgresql unavailable since …"
}

// Summary is the engine's summary with the relay's lag.
func (b adminBackend) Summary(ctx context.Context) (admin.Summary, error) {
	sum, err := b.Dispatcher.Summary(ctx)
	lag := b.relay.Lag().Seconds()
	sum.OutboxLagSeconds = &lag
	return sum, err
}

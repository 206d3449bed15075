package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/hookjet/hookjet/server"
)

const serveHelp = `hookjet serve [--config FILE]

Runs hookjet: with no nats.url it starts an embedded nats-server with
JetStream (data under data_dir, clients on nats.listen; every event is fsynced
before its PubAck unless nats.sync is a duration); with nats.url it joins
an existing NATS deployment, sharing the work with other hookjet processes.
With inbound.listen set it also runs the inbound gateway there (POST
/in/<source>; see 'hookjet inbound test').
The admin listener also serves the console (/console/) and, unless
portal.listen is set, the customer portal (/portal/).
SIGTERM/SIGINT stop it gracefully (exit 0); SIGHUP reloads the endpoints.
Every config key can be overridden with HOOKJET_<SECTION>_<KEY>; any other
HOOKJET_* variable is refused (exit 2), so a misspelt one is not ignored.
OTEL_EXPORTER_OTLP_ENDPOINT (or tracing.enabled) exports a span per delivery
attempt over OTLP; the other OTEL_* variables apply as usual.`

func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", serveHelp, stdout)
	path := fs.String("config", getenv("HOOKJET_CONFIG"), "config file (YAML); empty: defaults and environment only")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("serve: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadConfig(*path, getenv)
	if err != nil {
		return err
	}
	log := server.NewLogger(cfg.Log, stderr)
	// Caught from the start: a SIGHUP while Start waits (a cluster electing
	// leaders) would otherwise kill the process; it is handled once started.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	s, err := server.Start(ctx, cfg, server.Options{Log: log, Getenv: getenv, ConfigPath: *path})
	if err != nil {
		return err
	}
	// cfg is not used past this point, so that the parsed endpoints (35 MB
	// at 100,000) go to the collector: the server keeps what it needs.
	grace := cfg.Worker.ShutdownGrace
	for {
		select {
		case <-ctx.Done():
			log.Info("shutting down", "grace", grace)
			return s.Shutdown()
		case <-hup:
			next, err := loadConfig(*path, getenv)
			if err != nil {
				log.Error("reload refused; keeping the running endpoints", "err", err)
				continue
			}
			if err := s.Reload(ctx, next); err != nil {
				log.Error("reload", "err", err)
				continue
			}
			log.Info("reloaded endpoints", "endpoints", len(next.Endpoints))
		}
	}
}

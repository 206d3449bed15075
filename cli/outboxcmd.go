package cli

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/outbox"
	"github.com/hookjet/hookjet/server"
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
	var ln net.Listener
	if *listen != "" {
		if ln, err = net.Listen("tcp", *listen); err != nil {
			return usagef("outbox: --listen: %v", err)
		}
	}
	return server.RunRelay(ctx, cfg, ln, server.NewLogger(cfg.Log, stderr))
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

package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/server"
)

const publishHelp = `hookjet publish <event-type> [--id ID] [--tenant T] [--data JSON|@file] [--config FILE]

Publishes one event to hookjet.events.<event-type> with Nats-Msg-Id set to the
event id (a random one when --id is not given), and prints the stream sequence.
With --tenant the event is that tenant's (header Hookjet-Tenant): it reaches the
tenant's endpoints and those without a tenant; without it, only endpoints
without a tenant.
Publishing the same id again within the duplicate window is reported as a
duplicate and not stored twice. Any NATS client can do the same:
  nats pub hookjet.events.order.created '{"id":1}' -H Nats-Msg-Id:evt_1`

func runPublish(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("publish", publishHelp, stdout)
	path := fs.String("config", getenv("HOOKJET_CONFIG"), "config file, for the NATS address and credentials")
	id := fs.String("id", "", "event id (Nats-Msg-Id, the webhook-id receivers see); default: random")
	data := fs.String("data", "{}", "payload: JSON text, or @file to read a file (@- for stdin)")
	contentType := fs.String("content-type", "", "Content-Type header for the delivery (default application/json)")
	tenant := fs.String("tenant", "", "the event's tenant (header Hookjet-Tenant: a-z, 0-9, _ and -); default: none")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the publish acknowledgement")
	// Flags may follow the event type, as the help shows.
	positional, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return usagef("publish: want exactly one event type, e.g. hookjet publish order.created")
	}
	typ := positional[0]
	if typ == "" || strings.ContainsAny(typ, " *>") || strings.HasPrefix(typ, ".") || strings.HasSuffix(typ, ".") || strings.Contains(typ, "..") {
		return usagef("publish: %q is not a valid event type (dot-separated tokens, no wildcards)", typ)
	}
	if *tenant != "" {
		if err := config.CheckTenant(*tenant); err != nil {
			return usagef("publish: --tenant: %v", err)
		}
	}
	body, err := readData(*data)
	if err != nil {
		return usagef("publish: --data: %v", err)
	}
	if *contentType == "" && !json.Valid(body) {
		return usagef("publish: --data is not valid JSON; set --content-type for other payloads")
	}
	cfg, err := loadClientConfig(*path, getenv)
	if err != nil {
		return err
	}
	if err := cfg.Need("nats"); err != nil {
		return err
	}
	if *id == "" {
		*id = jetstream.NewEventID()
	}
	nc, err := jetstream.Dial(cfg.NATS, "hookjet-publish", server.NewLogger(cfg.Log, stderr))
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	ack, err := jetstream.PublishEvent(ctx, nc, typ, *id, body, *contentType, *tenant)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if ack.Duplicate {
		fmt.Fprintf(stdout, "duplicate: event %s was already stored as %s #%d; not stored again\n", *id, ack.Stream, ack.Sequence)
		return nil
	}
	fmt.Fprintf(stdout, "published %s id=%s stream=%s seq=%d\n", typ, *id, ack.Stream, ack.Sequence)
	return nil
}

func readData(v string) ([]byte, error) {
	switch {
	case v == "@-":
		return io.ReadAll(io.LimitReader(os.Stdin, 64<<20))
	case strings.HasPrefix(v, "@"):
		return os.ReadFile(v[1:])
	default:
		return []byte(v), nil
	}
}

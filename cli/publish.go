package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/client"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/publish"
	"github.com/hookjet/hookjet/server"
)

const publishHelp = `hookjet publish <event-type> [--id ID] [--tenant T] [--key K] [--data JSON|@file] [--http] [--config FILE]

Publishes one event of type <event-type> with the event id --id (a random
one when it is not given) and prints where it is stored. By default it
sends a NATS request to hookjet.publish.<event-type>, answered by a running
hookjet once the event is stored (batched with other publishers' events:
one synced write per batch). With --http it posts the event to
POST /api/v1/events instead (publish.listen when set, else admin.listen;
bearer token publish.token or admin.token).
With --tenant the event is that tenant's (header Hookjet-Tenant): it reaches
the tenant's endpoints and those without a tenant; without it, only
endpoints without a tenant. --key sets its ordering key (header
Hookjet-Ordering-Key). Types starting with hookjet. are hookjet's own
operational events (docs/operational-events.md) and are refused.
Publishing an id stored before (within the duplicate window, or later while
hookjet's dedupe ledger remembers it: dedupe.ttl) is reported as a duplicate
of the first copy and not stored twice. Any NATS client can publish directly too,
one synced write per event:
  nats pub hookjet.events.order.created '{"id":1}' -H Nats-Msg-Id:evt_1`

// publishFlags are the flags of hookjet publish.
type publishFlags struct {
	path, id, data, contentType, tenant, key, addr, token *string
	http                                                  *bool
	timeout                                               *time.Duration
}

func runPublish(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("publish", publishHelp, stdout)
	f := publishFlags{
		path:        fs.String("config", getenv("HOOKJET_CONFIG"), "config file, for the NATS address and credentials (with --http: the API's address and token)"),
		id:          fs.String("id", "", "event id (Nats-Msg-Id, the webhook-id receivers see); default: random"),
		data:        fs.String("data", "{}", "payload: JSON text, or @file to read a file (@- for stdin)"),
		contentType: fs.String("content-type", "", "Content-Type header for the delivery (default application/json; not with --http)"),
		tenant:      fs.String("tenant", "", "the event's tenant (header Hookjet-Tenant: a-z, 0-9, _ and -); default: none"),
		key:         fs.String("key", "", "the event's ordering key (header Hookjet-Ordering-Key, at most 255 bytes); default: none"),
		http:        fs.Bool("http", false, "publish over HTTP (POST /api/v1/events) instead of a NATS request"),
		addr:        fs.String("addr", "", "with --http: the API's address (default: publish.listen, else admin.listen)"),
		token:       fs.String("token", "", "with --http: bearer token (default: publish.token, else admin.token from the config or the environment)"),
		timeout:     fs.Duration("timeout", 5*time.Second, "how long to wait for the event to be stored"),
	}
	// Flags may follow the event type, as the help shows.
	positional, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(positional) != 1 {
		return usagef("publish: want exactly one event type, e.g. hookjet publish order.created")
	}
	e, err := f.event(positional[0])
	if err != nil {
		return err
	}
	cfg, err := loadClientConfig(*f.path, getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *f.timeout)
	defer cancel()
	if *f.http {
		return publishHTTP(ctx, cfg, f, e, stdout)
	}
	if err := cfg.Need("nats"); err != nil {
		return err
	}
	nc, err := jetstream.Dial(cfg.NATS, "hookjet-publish", server.NewLogger(cfg.Log, stderr))
	if err != nil {
		return err
	}
	defer nc.Close()
	r, err := jetstream.PublishRequest(ctx, nc, e)
	if re, refused := errors.AsType[*publish.ReplyError](err); refused {
		if re.Status == publish.StatusInvalid && len(re.Errors) > 1 {
			msgs := make([]string, len(re.Errors))
			for i, p := range re.Errors {
				msgs[i] = p.Error
			}
			return usagef("publish: the event catalogue refuses it: %s", strings.Join(msgs, "; "))
		}
		return usagef("publish: %v", err)
	}
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if r.Duplicate {
		fmt.Fprintf(stdout, "duplicate: event %s was already stored as %s #%d; not stored again\n", r.ID, r.Stream, r.Seq)
		return nil
	}
	fmt.Fprintf(stdout, "published %s id=%s stream=%s seq=%d\n", e.Type, r.ID, r.Stream, r.Seq)
	return nil
}

// event checks the flags and builds the event of type typ.
func (f publishFlags) event(typ string) (publish.Event, error) {
	if err := config.ValidateEventType(typ); err != nil {
		return publish.Event{}, usagef("publish: %q is not a valid event type: %v", typ, err)
	}
	if err := config.CheckPublishable(typ); err != nil {
		return publish.Event{}, usagef("publish: event type %q %v", typ, err)
	}
	e := publish.Event{Type: typ, ID: *f.id, Tenant: *f.tenant, Key: *f.key}
	if e.ID == "" {
		e.ID = publish.NewID()
	} else if err := publish.CheckID(e.ID); err != nil {
		return e, usagef("publish: --id: %v", err)
	}
	if e.Tenant != "" {
		if err := config.CheckTenant(e.Tenant); err != nil {
			return e, usagef("publish: --tenant: %v", err)
		}
	}
	if e.Key != "" {
		if err := publish.CheckKey(e.Key); err != nil {
			return e, usagef("publish: --key: %v", err)
		}
	}
	body, err := readData(*f.data)
	if err != nil {
		return e, usagef("publish: --data: %v", err)
	}
	e.Data = body
	switch {
	case *f.http && *f.contentType != "":
		return e, usagef("publish: --content-type: the HTTP API takes JSON payloads only; leave out --http")
	case *f.contentType == "" && !json.Valid(body):
		return e, usagef("publish: --data is not valid JSON; set --content-type for other payloads")
	case *f.contentType != "":
		e.Header = map[string][]string{"Content-Type": {*f.contentType}}
	}
	return e, nil
}

// publishHTTP posts e to POST /api/v1/events through package client.
func publishHTTP(ctx context.Context, cfg *config.Config, f publishFlags, e publish.Event, stdout io.Writer) error {
	base := *f.addr
	if base == "" {
		base = cfg.Publish.Listen
		if base == "" {
			base = cfg.Admin.Listen
		}
	}
	token := *f.token
	if token == "" {
		if err := cfg.Need("publish.token", "admin.token"); err != nil {
			return err
		}
		token = cfg.Publish.Token.Reveal()
		if token == "" {
			token = cfg.Admin.Token.Reveal()
		}
	}
	cl := client.New(base, client.WithToken(token), client.WithHTTPClient(&http.Client{Timeout: time.Minute}))
	c := &adminClient{base: cl.BaseURL(), api: cl}
	out, err := cl.Publish(ctx, []api.PublishEvent{{ID: e.ID, Type: e.Type, Data: e.Data, Tenant: e.Tenant, Key: e.Key}})
	if err != nil {
		return fmt.Errorf("publish: %w", c.answer(err))
	}
	if len(out.Results) == 1 && out.Results[0].Duplicate {
		r := out.Results[0]
		fmt.Fprintf(stdout, "duplicate: event %s was already stored as %s #%d; not stored again\n", e.ID, r.Stream, r.Seq)
		return nil
	}
	if out.Duplicates > 0 { // a server without results
		fmt.Fprintf(stdout, "duplicate: event %s was already stored; not stored again\n", e.ID)
		return nil
	}
	fmt.Fprintf(stdout, "published %s id=%s (HTTP 202)\n", e.Type, e.ID)
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

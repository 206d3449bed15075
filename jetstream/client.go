package jetstream

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// ClientURL is the NATS a client command (publish, outbox) connects to:
// nats.url, or else the embedded server of a `hookjet serve` on nats.listen
// (a wildcard host read as 127.0.0.1).
func ClientURL(cfg config.NATS) (string, error) {
	if cfg.URL != "" {
		return cfg.URL, nil
	}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return "", &config.FieldError{Key: "nats.listen", Err: err}
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return "nats://" + net.JoinHostPort(host, port), nil
}

// Dial connects a client command to [ClientURL]. Its error names the address
// (without credentials) and the likely cause.
func Dial(cfg config.NATS, name string, log *slog.Logger) (*nats.Conn, error) {
	external := cfg.URL != ""
	u, err := ClientURL(cfg)
	if err != nil {
		return nil, err
	}
	cfg.URL = u
	nc, err := Connect(cfg, nil, name, log)
	if err != nil {
		hint := "is hookjet serve running? Its embedded NATS listens on nats.listen"
		if external {
			hint = "is the NATS deployment of nats.url reachable?"
		}
		return nil, fmt.Errorf("NATS at %s: %w (%s; pass --config with the file hookjet serve uses, or set nats.url / HOOKJET_NATS_URL)", RedactURL(u), err, hint)
	}
	return nc, nil
}

// RedactURL drops user information from each of the comma-separated NATS
// URLs in u, for messages.
func RedactURL(u string) string {
	parts := strings.Split(u, ",")
	for i, p := range parts {
		if pu, err := url.Parse(strings.TrimSpace(p)); err == nil && pu.User != nil {
			pu.User = nil
			parts[i] = pu.String()
		}
	}
	return strings.Join(parts, ",")
}

// Published is the stream's answer to [PublishEvent].
type Published struct {
	Stream    string
	Sequence  uint64
	Duplicate bool // the id was already stored within the duplicate window
}

// PublishEvent stores one event of type typ with Nats-Msg-Id id in
// HOOKJET_EVENTS and waits for the stream's acknowledgement. A tenant
// (empty: none) goes in header Hookjet-Tenant.
func PublishEvent(ctx context.Context, nc *nats.Conn, typ, id string, body []byte, contentType, tenant string) (Published, error) {
	js, err := natsjs.New(nc)
	if err != nil {
		return Published{}, fmt.Errorf("jetstream: %w", err)
	}
	msg := nats.NewMsg(EventsPrefix + typ)
	msg.Data = body
	msg.Header.Set(HdrMsgID, id)
	if contentType != "" {
		msg.Header.Set(HdrContentType, contentType)
	}
	if tenant != "" {
		msg.Header.Set(HdrTenant, tenant)
	}
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		return Published{}, fmt.Errorf("publish to %s: %w", EventsStream, err)
	}
	return Published{Stream: ack.Stream, Sequence: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// NewEventID returns a random event id, evt_<unique>.
func NewEventID() string { return "evt_" + nats.NewInbox()[len("_INBOX."):] }

package jetstream

import (
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"

	"github.com/nats-io/nats.go"

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

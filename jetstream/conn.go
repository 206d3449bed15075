package jetstream

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
)

// Connect opens the NATS connection hookjet uses. With an embedded server the
// connection is in-process; otherwise it dials cfg.URL with the configured
// credentials and reconnects for ever.
func Connect(cfg config.NATS, embedded *server.Server, name string, log *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			log.Info("nats reconnected", "url", c.ConnectedUrlRedacted())
		}),
	}
	if cfg.Token.Reveal() != "" {
		opts = append(opts, nats.Token(cfg.Token.Reveal()))
	}
	if cfg.User != "" {
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password.Reveal()))
	}
	url := cfg.URL
	if embedded != nil {
		opts = append(opts, nats.InProcessServer(embedded))
		url = embedded.ClientURL()
	} else {
		if cfg.Creds != "" {
			opts = append(opts, nats.UserCredentials(cfg.Creds))
		}
		if cfg.NKey != "" {
			o, err := nats.NkeyOptionFromSeed(cfg.NKey)
			if err != nil {
				return nil, fmt.Errorf("nats.nkey: %w", err)
			}
			opts = append(opts, o)
		}
		if cfg.TLSCA != "" {
			opts = append(opts, nats.RootCAs(cfg.TLSCA))
		}
		if cfg.TLSCert != "" || cfg.TLSKey != "" {
			opts = append(opts, nats.ClientCert(cfg.TLSCert, cfg.TLSKey))
		}
		opts = append(opts, nats.RetryOnFailedConnect(false))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to nats: %w", err)
	}
	return nc, nil
}

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// Node is the NATS a hookjet process uses: the embedded nats-server when
// there is no nats.url, and the client connection with its JetStream
// context. Package cli holds one and does not import NATS itself.
type Node struct {
	srv *server.Server // nil with nats.url
	nc  *nats.Conn
	js  natsjs.JetStream
	// fan is the fan-out's own connection (FanoutConn); nil for a client
	// command's node.
	fan *nats.Conn
}

// OpenNode starts the embedded server when cfg.URL is empty (data under
// dataDir/nats) and connects to it or to cfg.URL as name. On error nothing
// is left running.
func OpenNode(cfg config.NATS, dataDir, name string, log *slog.Logger) (*Node, error) {
	n := &Node{}
	var err error
	if cfg.URL == "" {
		if n.srv, err = StartEmbedded(cfg, dataDir); err != nil {
			return nil, err
		}
	}
	if n.nc, err = Connect(cfg, n.srv, name, log); err != nil {
		n.Shutdown()
		return nil, err
	}
	if n.fan, err = Connect(cfg, n.srv, name+" (fan-out)", log); err != nil {
		n.nc.Close()
		n.Shutdown()
		return nil, err
	}
	if n.js, err = natsjs.New(n.nc); err != nil {
		n.nc.Close()
		n.fan.Close()
		n.Shutdown()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return n, nil
}

// DialNode connects a client command (the outbox relay) to [ClientURL],
// retrying with backoff until ctx is done (then it returns nil, nil); a
// configuration error returns at once.
func DialNode(ctx context.Context, cfg config.NATS, name string, log *slog.Logger) (*Node, error) {
	wait := 250 * time.Millisecond
	for {
		nc, err := Dial(cfg, name, log)
		if err == nil {
			js, err := natsjs.New(nc)
			if err != nil {
				nc.Close()
				return nil, fmt.Errorf("jetstream: %w", err)
			}
			return &Node{nc: nc, js: js}, nil
		}
		if errors.Is(err, config.ErrInvalid) {
			return nil, err
		}
		log.Warn("nats unavailable; retrying", "client", name, "err", err)
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// DialClient connects a one-shot client command (`hookjet inbound test`) to
// [ClientURL] once, without retrying; its error is [Dial]'s.
func DialClient(cfg config.NATS, name string, log *slog.Logger) (*Node, error) {
	nc, err := Dial(cfg, name, log)
	if err != nil {
		return nil, err
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &Node{nc: nc, js: js}, nil
}

// Conn is the client connection.
func (n *Node) Conn() *nats.Conn { return n.nc }

// FanoutConn is the connection the fan-out pulls events and acks them on,
// apart from the one that carries everything else (the delivery log's
// records, tasks, dead letters, API requests): a server that holds back a
// connection's publishes while a stream stores a burst then holds back
// none of the fan-out's pulls and acks. A client command's node has one
// connection for both.
func (n *Node) FanoutConn() *nats.Conn {
	if n.fan == nil {
		return n.nc
	}
	return n.fan
}

// JetStream is the connection's JetStream context.
func (n *Node) JetStream() natsjs.JetStream { return n.js }

// Embedded reports whether the node runs the embedded server.
func (n *Node) Embedded() bool { return n.srv != nil }

// ClientURL is the embedded server's client URL (nats://127.0.0.1:port);
// empty with nats.url.
func (n *Node) ClientURL() string {
	if n.srv == nil {
		return ""
	}
	return n.srv.ClientURL()
}

// InProcessConn is a connection to the embedded server without TCP (for
// nats.InProcessServer); it fails when there is no embedded server.
func (n *Node) InProcessConn() (net.Conn, error) {
	if n.srv == nil {
		return nil, errors.New("nats is not embedded")
	}
	return n.srv.InProcessConn()
}

// MaxPayload is the largest message the server takes.
func (n *Node) MaxPayload() int64 { return n.nc.MaxPayload() }

// Drain drains the connection: what was published is flushed, then it
// closes.
func (n *Node) Drain() error { return n.nc.Drain() }

// CloseConn flushes what was published (for up to timeout) and closes the
// connection; the embedded server keeps running until Shutdown.
func (n *Node) CloseConn(timeout time.Duration, log *slog.Logger) {
	if n == nil || n.nc == nil {
		return
	}
	for _, nc := range []*nats.Conn{n.fan, n.nc} {
		if nc == nil {
			continue
		}
		if err := nc.FlushTimeout(timeout); err != nil {
			log.Debug("nats flush", "err", err)
		}
		nc.Close()
	}
}

// Shutdown stops the embedded server, if there is one, and waits for it.
func (n *Node) Shutdown() {
	if n == nil || n.srv == nil {
		return
	}
	n.srv.Shutdown()
	n.srv.WaitForShutdown()
}

// OutboxPublisherFor is the outbox relay's publisher on n for cfg: twice a
// batch of publishes in flight, messages up to the configured size.
func (n *Node) OutboxPublisherFor(cfg *config.Config) (*OutboxPublisher, error) {
	return NewOutboxPublisher(n.nc, 2*cfg.Outbox.Batch, int(MaxMsgSize(cfg)))
}

// AwaitOutboxStreams waits until hookjet's streams exist on n, logging
// while they do not, until ctx is done.
func (n *Node) AwaitOutboxStreams(ctx context.Context, log *slog.Logger) {
	for ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := WaitOutboxStreams(sctx, n.nc)
		cancel()
		if err == nil {
			return
		}
		log.Warn("outbox relay: waiting for hookjet's streams", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(2 * time.Second):
		}
	}
}

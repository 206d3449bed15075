package cli

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// readDurability finds out how hookjet's streams are stored: the embedded
// server's nats.sync, or with nats.url the servers' sync policy as far as it
// can be read (only the system account may: otherwise "unknown", treated
// as lazy), and each stream's replicas. With nats.url it warns about the
// streams a power cut of one server could take acknowledged messages from.
func readDurability(ctx context.Context, cfg *config.Config, nc *nats.Conn, js natsjs.JetStream, log *slog.Logger) jetstream.Durability {
	d := jetstream.EmbeddedDurability(cfg.NATS)
	if cfg.NATS.URL != "" {
		sync, err := jetstream.ReadSyncPolicy(ctx, nc)
		if err != nil {
			log.Info("the NATS servers' JetStream sync policy cannot be read; treating it as lazy", "err", err)
		}
		d.Sync = sync
	}
	if err := jetstream.ReadStreams(ctx, js, &d); err != nil {
		log.Warn("cannot read the streams' replicas", "err", err)
		return d
	}
	if cfg.NATS.URL != "" && len(d.AtRisk) > 0 {
		log.Warn("streams with one replica on a NATS server that acknowledges before fsync: a power cut or kernel crash of that server can lose acknowledged events; "+
			"set jetstream { sync_interval: always } on the servers, or streams.replicas: 3 on a cluster",
			"sync", d.Sync, "streams", d.AtRisk)
	}
	return d
}

// relayHold is how long `hookjet outbox` keeps a row after its PubAck: the
// sync interval when HOOKJET_EVENTS could lose the event to a power cut,
// else 0. Without nats.url the relay talks to the embedded server of a
// `hookjet serve` with the same config, whose nats.sync it reads there.
func relayHold(ctx context.Context, cfg *config.Config, nc *nats.Conn, js natsjs.JetStream, log *slog.Logger) time.Duration {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d := readDurability(rctx, cfg, nc, js, log)
	if len(d.Streams) == 0 { // not readable: assume the worst
		iv, _ := d.Lazy()
		return iv
	}
	return d.EventsHold()
}

package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// readDurability finds out how hookjet's streams are stored: the embedded
// server's nats.sync (recorded in HOOKJET_EVENTS's metadata for relays that
// connect over nats.url), or with nats.url the servers' sync policy as far
// as it can be read (only the system account may ask the servers; else the
// policy recorded in the metadata; else "unknown", treated as lazy), and
// each stream's replicas. With nats.url it warns about the
// streams a power cut of one server could take acknowledged messages from.
func readDurability(ctx context.Context, cfg *config.Config, node *jetstream.Node, log *slog.Logger) jetstream.Durability {
	nc, js := node.Conn(), node.JetStream()
	d := jetstream.EmbeddedDurability(cfg.NATS)
	if cfg.NATS.URL != "" {
		sync, err := jetstream.ReadSyncPolicy(ctx, nc)
		if err != nil {
			log.Info("the NATS servers' JetStream sync policy cannot be read; treating it as lazy", "err", err)
		}
		d.Sync = sync
	}
	if cfg.NATS.URL == "" {
		if err := jetstream.RecordSyncPolicy(ctx, js, d.Sync); err != nil {
			log.Warn("cannot record nats.sync for outbox relays", "err", err)
		}
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
// else 0. The policy comes from the servers (system account only), else
// from HOOKJET_EVENTS's metadata (recorded by `hookjet serve` with the
// embedded server), else, without nats.url, from this config's nats.sync
// (the relay then talks to the embedded server of a `hookjet serve` with
// the same config); unknown is treated as lazy.
func relayHold(ctx context.Context, cfg *config.Config, node *jetstream.Node, log *slog.Logger) time.Duration {
	nc, js := node.Conn(), node.JetStream()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d := jetstream.Durability{Sync: jetstream.SyncUnknown}
	if cfg.NATS.URL != "" {
		sync, err := jetstream.ReadSyncPolicy(rctx, nc)
		if err != nil {
			log.Info("the NATS servers' JetStream sync policy cannot be read", "err", err)
		}
		d.Sync = sync
	}
	err := jetstream.ReadStreams(rctx, js, &d)
	if err == nil && d.Sync == jetstream.SyncUnknown && cfg.NATS.URL == "" {
		d.Sync = jetstream.EmbeddedDurability(cfg.NATS).Sync
		err = jetstream.ReadStreams(rctx, js, &d)
	}
	if err != nil || len(d.Streams) == 0 { // not readable: assume the worst
		log.Warn("cannot read HOOKJET_EVENTS's replicas; keeping rows for JetStream's default sync interval after their PubAck", "err", err)
		return jetstream.DefaultSyncInterval
	}
	hold := d.EventsHold()
	if hold > 0 {
		log.Warn("HOOKJET_EVENTS has one replica on a NATS server that may acknowledge before fsync: rows stay in the outbox table for the sync interval after their PubAck, so that a power cut of that server loses none",
			"sync", d.Sync, "hold", hold)
	}
	return hold
}

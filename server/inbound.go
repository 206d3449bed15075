package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/hookjet/hookjet/admin"
	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/inbound"
	"github.com/hookjet/hookjet/jetstream"
)

// inboundServer is the inbound gateway a Server runs on inbound.listen.
type inboundServer struct {
	gw    *inbound.Gateway
	store *jetstream.InboundStore
	http  *httpListener
}

// startInbound starts the inbound gateway when inbound.listen is set: it
// ensures HOOKJET_INBOUND and its dedupe bucket, then listens. It is
// stopped first at shutdown (stopInbound), before anything it stores
// through.
func (s *Server) startInbound(ctx context.Context) error {
	cfg, js := s.cfg, s.node.JetStream()
	if cfg.Inbound.Listen == "" {
		return nil
	}
	if err := fitInboundBody(cfg, s.node.MaxPayload(), s.log); err != nil {
		return err
	}
	s.starting("creating the inbound stream")
	if err := jetstream.EnsureInbound(ctx, js, cfg, s.log); err != nil {
		return err
	}
	store := jetstream.OpenInboundStore(js, s.seen, 0, s.log)
	gw, err := inbound.New(cfg.Inbound, store, inbound.NewMetrics(s.registry), inbound.WithLogger(s.log))
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Inbound.Listen)
	if err != nil {
		return fmt.Errorf("inbound.listen: %w", err)
	}
	s.inbound = &inboundServer{gw: gw, store: store, http: s.serveHTTP("inbound gateway", ln, &http.Server{
		Handler:           gw,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	})}
	s.log.Info("inbound gateway listening", "addr", "http://"+s.inbound.http.addr(), "sources", len(cfg.Inbound.Sources))
	return nil
}

// fitInboundBody refuses an inbound.max_body_bytes the NATS server's
// max_payload cannot carry, or lowers the default to fit.
func fitInboundBody(cfg *config.Config, serverMax int64, log *slog.Logger) error {
	need := int64(cfg.Inbound.MaxBodyBytes) + jetstream.InboundHeadroom
	if serverMax <= 0 || need <= serverMax {
		return nil
	}
	if cfg.Inbound.MaxBodyBytes != config.DefaultInboundMaxBody {
		return &config.FieldError{Key: "inbound.max_body_bytes", Err: fmt.Errorf(
			"%d bytes plus %d of headroom for the inbound headers exceed the NATS server's max_payload (%d): lower it or raise max_payload",
			cfg.Inbound.MaxBodyBytes, jetstream.InboundHeadroom, serverMax)}
	}
	cfg.Inbound.MaxBodyBytes = int(serverMax - jetstream.InboundHeadroom)
	log.Warn("inbound.max_body_bytes lowered to fit the NATS server's max_payload", "max_body_bytes", cfg.Inbound.MaxBodyBytes, "server_max_payload", serverMax)
	return nil
}

// stopInbound stops taking requests, waits (up to 5 s) for those in flight
// to be stored and answered, then for their dedupe marks. Safe to call when
// no gateway runs.
func (s *Server) stopInbound() {
	in := s.inbound
	if in == nil {
		return
	}
	s.inbound = nil
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in.http.stop(ctx)
	if err := in.store.Flush(ctx); err != nil {
		s.log.Warn("inbound gateway shutdown", "err", err)
	}
}

// InboundAddr is the address the inbound gateway listens on; empty when it
// does not run.
func (s *Server) InboundAddr() string {
	if s.inbound == nil {
		return ""
	}
	return s.inbound.http.addr()
}

// withInbound adds the gateway's per-source counts to b's summary when the
// gateway runs.
func (s *Server) withInbound(b admin.Backend) admin.Backend {
	if s.inbound == nil {
		return b
	}
	return inboundBackend{Backend: b, gw: s.inbound.gw}
}

// inboundBackend is an admin backend whose summary has the inbound counts.
type inboundBackend struct {
	admin.Backend
	gw *inbound.Gateway
}

// Summary is the backend's summary with the inbound gateway's counts.
func (b inboundBackend) Summary(ctx context.Context) (api.Summary, error) {
	sum, err := b.Backend.Summary(ctx)
	counts := b.gw.Counts()
	sum.Inbound = make(map[string]api.InboundCounts, len(counts))
	for id, c := range counts {
		sum.Inbound[id] = api.InboundCounts{
			Accepted: c.Accepted, Duplicates: c.Duplicates, SignatureFailures: c.SignatureFailures,
			WindowRejections: c.WindowRejections, TooLarge: c.TooLarge, Unavailable: c.Unavailable,
		}
	}
	return sum, err
}

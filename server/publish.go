package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hookjet/hookjet/admin"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/publish"
)

// publishServer is the publish API of a Server: the group committer, the
// responder of hookjet.publish.<type> requests and, with publish.listen,
// a listener of its own for POST /api/v1/events.
type publishServer struct {
	committer *publish.Committer
	responder *jetstream.PublishResponder
	handler   http.Handler  // POST /api/v1/events, mounted on the admin API too
	http      *httpListener // publish.listen; nil without it
}

// publishInFlight bounds the NATS publish requests waiting for their batch
// in one process; the subscription holds back the rest.
const publishInFlight = 10000

// startPublish starts the committer, answers publish requests on NATS and,
// with publish.listen, serves the HTTP route there. It is stopped first at
// shutdown (stopPublish): requests in flight are stored and answered.
func (s *Server) startPublish() error {
	cfg := s.cfg
	store, err := jetstream.NewEventPublisher(s.node.Conn())
	if err != nil {
		return err
	}
	// The ledger answers an id stored before, past the stream's duplicate
	// window, as a duplicate of its first copy: the fan-out would drop a
	// second copy, so it is not stored.
	c := publish.New(store, publish.WithMaxPayload(cfg.Security.MaxPayloadBytes), publish.WithLogger(s.log), publish.WithCatalog(s.catalog.live),
		publish.WithLedger(s.ledger, jetstream.EventsStream))
	p := &publishServer{committer: c}
	s.publish = p
	p.handler = publish.NewHandler(c, publish.WithTokens(cfg.Publish.Token.Reveal(), cfg.Admin.Token.Reveal()))
	if p.responder, err = jetstream.ServePublish(s.node.Conn(), c, publishInFlight, s.log); err != nil {
		return err
	}
	if cfg.Publish.Listen == "" {
		return nil
	}
	ln, err := net.Listen("tcp", cfg.Publish.Listen)
	if err != nil {
		return fmt.Errorf("publish.listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(publish.Route, p.handler)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	})
	var h http.Handler = mux
	if cfg.Publish.Token.IsZero() && cfg.Admin.Token.IsZero() {
		// Open (loopback) mode: refuse what a web page could forge.
		h = admin.OpenGuard(cfg.Publish.Listen, h)
	}
	p.http = s.serveHTTP("publish API", ln, &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		WriteTimeout:      time.Minute,
		IdleTimeout:       2 * time.Minute,
	})
	s.log.Info("publish API listening", "addr", "http://"+p.http.addr()+"/api/v1/events")
	return nil
}

// stopPublish stops taking publish requests (HTTP on publish.listen and
// NATS), stores and answers those in flight, then stops the committer: the
// admin API's route answers 503 from then on. Safe to call when nothing
// runs.
func (s *Server) stopPublish() {
	p := s.publish
	if p == nil {
		return
	}
	s.publish = nil
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if p.http != nil {
		p.http.stop(ctx)
	}
	if p.responder != nil {
		p.responder.Stop()
	}
	if err := p.committer.Close(ctx); err != nil {
		s.log.Warn("publish shutdown", "err", err)
	}
}

// PublishAddr is the address of publish.listen; empty when it is not set.
func (s *Server) PublishAddr() string {
	if s.publish == nil || s.publish.http == nil {
		return ""
	}
	return s.publish.http.addr()
}

// publishOption mounts POST /api/v1/events on the admin API.
func (s *Server) publishOption() admin.Option {
	if s.publish == nil {
		return admin.WithPublish(nil)
	}
	return admin.WithPublish(s.publish.handler)
}

package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
)

// httpListener is an HTTP server of the Server's on an address of its own
// (inbound.listen, publish.listen), served on a goroutine the Server owns.
type httpListener struct {
	name string // for the log: "inbound gateway", "publish API"
	srv  *http.Server
	ln   net.Listener
	run  *owned
	log  *slog.Logger
}

// serveHTTP serves srv (its handler and timeouts set; its errors go to the
// Server's log) on ln until stop.
func (s *Server) serveHTTP(name string, ln net.Listener, srv *http.Server) *httpListener {
	srv.ErrorLog = slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)
	l := &httpListener{name: name, srv: srv, ln: ln, log: s.log}
	l.run = goOwned(context.Background(), func(context.Context) {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			l.log.Error(name, "err", err)
		}
	})
	return l
}

// stop stops taking requests and waits, until ctx ends, for those in
// flight to be answered (then closes the rest), and for the goroutine.
func (l *httpListener) stop(ctx context.Context) {
	if err := l.srv.Shutdown(ctx); err != nil {
		l.log.Warn(l.name+" shutdown", "err", err)
		_ = l.srv.Close()
	}
	l.run.stop()
}

// addr is the address it listens on.
func (l *httpListener) addr() string { return l.ln.Addr().String() }

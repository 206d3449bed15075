package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/console"
	"github.com/hookjet/hookjet/deliver"
)

// mountConsole puts the console and the portal (package console) in front
// of the admin API, and starts portal.listen when it is set.
func (s *Server) mountConsole(api http.Handler) (http.Handler, error) {
	cfg := s.cfg
	var ln net.Listener
	if cfg.Portal.Listen != "" {
		var err error
		if ln, err = net.Listen("tcp", cfg.Portal.Listen); err != nil {
			return nil, fmt.Errorf("portal.listen: %w", err)
		}
	}
	o := console.Options{
		API: api, Token: cfg.Admin.Token.Reveal(), SecretKey: s.secretKey,
		FrameAncestors: cfg.Portal.FrameAncestors, Log: s.log,
		HideResponses:   func(u string) bool { return privateResponses(cfg.Security, u) },
		AllowTransforms: cfg.Portal.AllowTransforms,
		Destinations:    cfg.Portal.Destinations,
	}
	if ln != nil {
		o.PortalAddr = ln.Addr().String()
	}
	c, err := console.New(o)
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return nil, err
	}
	s.console = c
	if ln != nil {
		s.portalLn = ln
		s.portal = &http.Server{
			Handler:           c.PortalHandler(),
			ReadHeaderTimeout: 10 * time.Second,
			ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		}
		s.portalRun = goOwned(context.Background(), func(context.Context) {
			if err := s.portal.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.log.Error("portal server", "err", err)
			}
		})
		s.log.Info("portal listening", "portal", "http://"+ln.Addr().String()+"/portal/")
	}
	return c.AdminHandler(), nil
}

// closeConsole stops the console's background work, once the listeners
// serving it have stopped.
func (s *Server) closeConsole() {
	if s.console != nil {
		s.console.Close()
	}
}

// stopPortal shuts the portal listener down gracefully, within ctx. It
// does nothing without portal.listen.
func (s *Server) stopPortal(ctx context.Context) {
	if s.portal == nil {
		return
	}
	if err := s.portal.Shutdown(ctx); err != nil {
		s.log.Warn("portal shutdown", "err", err)
	}
	s.closePortal()
}

// closePortal stops the portal listener at once (after stopPortal: nothing
// is left).
func (s *Server) closePortal() {
	if s.portal == nil {
		return
	}
	_ = s.portal.Close()
	s.portalRun.stop()
}

// PortalAddr is the address portal.listen listens on, empty without one.
func (s *Server) PortalAddr() string {
	if s.portalLn == nil {
		return ""
	}
	return s.portalLn.Addr().String()
}

// privateResponses reports whether a response from endpoint URL u may have
// come from a private or loopback address: when security opens private
// networks (allow_private_networks, allow_cidrs) for any host that is not
// a public IP address, since a name may resolve inside the network. The
// portal then hides response excerpts, which could be an internal
// service's error page.
func privateResponses(sec config.Security, u string) bool {
	if !sec.AllowPrivateNetworks && len(sec.AllowCIDRs) == 0 {
		return false // every delivery went to a public address
	}
	pu, err := url.Parse(u)
	if err != nil {
		return true
	}
	ip, err := netip.ParseAddr(strings.Trim(pu.Hostname(), "[]"))
	if err != nil {
		return true // a name: it may resolve to a private address
	}
	return publicGuard.Check(ip) != nil
}

// publicGuard accepts public addresses only.
var publicGuard = deliver.NewGuard(false, nil)

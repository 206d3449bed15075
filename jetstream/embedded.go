package jetstream

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/hookjet/hookjet/config"
)

// StartEmbedded starts an in-process nats-server with JetStream file storage
// under dataDir/nats, listening on cfg.Listen (port 0: any free port). It returns once the server
// accepts connections; the caller owns it and stops it with Shutdown and
// WaitForShutdown.
//
// cfg.Sync sets the server's sync policy: "always" (SyncAlways: every stored
// message is fsynced before its PubAck) or a duration (SyncInterval: fsync
// every interval; a power cut loses what was acknowledged since the last
// one). The caller logs the warning a lazy interval deserves.
func StartEmbedded(cfg config.NATS, dataDir string) (*server.Server, error) {
	host, portStr, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("nats.listen: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("nats.listen: bad port %q", portStr)
	}
	if port == 0 {
		port = server.RANDOM_PORT // "any free port", as for admin.listen; nats-server reads 0 as 4222
	}
	if port > 0 {
		// nats-server only logs a busy port and never becomes ready: check
		// first, so the error names the key at once.
		ln, err := net.Listen("tcp", cfg.Listen)
		if err != nil {
			return nil, fmt.Errorf("nats.listen: %w", err)
		}
		if err := ln.Close(); err != nil {
			return nil, fmt.Errorf("nats.listen: %w", err)
		}
	}
	opts := &server.Options{
		ServerName: "hookjet",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   filepath.Join(dataDir, "nats"),
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
	if d, lazy := cfg.SyncInterval(); lazy {
		opts.SyncInterval = d
	} else {
		opts.SyncAlways = true
	}
	if cfg.Token.Reveal() != "" {
		opts.Authorization = cfg.Token.Reveal()
	}
	if cfg.User != "" {
		opts.Username = cfg.User
		opts.Password = cfg.Password.Reveal()
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats-server: %w", err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		s.WaitForShutdown()
		return nil, fmt.Errorf("embedded nats-server did not become ready on %s", cfg.Listen)
	}
	return s, nil
}

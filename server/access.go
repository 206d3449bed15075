package server

import (
	"errors"
	"net"
)

// ErrNotEmbedded is returned by [Server.InProcessConn] when hookjet uses an
// external NATS deployment.
var ErrNotEmbedded = errors.New("nats is not embedded")

// NATSURL is the client URL of the NATS deployment the server uses: the
// embedded server's (nats://127.0.0.1:<port>) or nats.url.
func (s *Server) NATSURL() string {
	if s.node.Embedded() {
		return s.node.ClientURL()
	}
	return s.config().NATS.URL
}

// InProcessConn returns an in-process connection to the embedded NATS
// server, so that a client in the same process (nats.InProcessServer(s))
// needs no TCP. It fails with ErrNotEmbedded when NATS is external.
func (s *Server) InProcessConn() (net.Conn, error) {
	if !s.node.Embedded() {
		return nil, ErrNotEmbedded
	}
	return s.node.InProcessConn()
}

// Delivered reports whether endpoint answered 2xx to the event eventID and
// hookjet recorded it (within dedupe.ttl).
func (s *Server) Delivered(endpoint, eventID string) (bool, error) {
	return s.ledger.Delivered(endpoint, eventID)
}

package server

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/deliver"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/destination/kafkadest"
	"github.com/hookjet/hookjet/destination/natsdest"
	"github.com/hookjet/hookjet/destination/rabbitmqdest"
)

// brokers are the openers of the broker destinations, each holding the
// connections its endpoints share (per address and credentials), every
// one dialed through the SSRF guard: the operator's endpoints' or, for a
// tenant's, the strict one.
type brokers struct {
	nats     *natsdest.Opener
	kafka    *kafkadest.Opener
	rabbitmq *rabbitmqdest.Opener
}

func newBrokers(guard, strict *deliver.Guard) *brokers {
	d, sd := guardDialer(guard), guardDialer(strict)
	return &brokers{
		nats:     natsdest.New(natsdest.Config{Dialer: d, StrictDialer: sd, Name: "hookjet/" + Version}),
		kafka:    kafkadest.New(kafkadest.Config{Dialer: d, StrictDialer: sd, ClientID: "hookjet"}),
		rabbitmq: rabbitmqdest.New(rabbitmqdest.Config{Dialer: d, StrictDialer: sd, Name: "hookjet/" + Version}),
	}
}

// close closes every broker connection; the dispatcher has stopped.
func (b *brokers) close() {
	b.nats.Close()
	b.kafka.Close()
	b.rabbitmq.Close()
}

// destinations are the destination types endpoints may name, each with
// what opens an endpoint's destination: the HTTP webhook through the
// process's one client, the brokers through their openers. The engine
// knows none of them by name.
func (s *Server) destinations() map[string]destination.Opener {
	client := s.client
	return map[string]destination.Opener{
		destination.Webhook: func(ep destination.Endpoint) (destination.Destination, error) {
			return client.Open(ep), nil
		},
		config.DestinationNATS:     s.brokers.nats.Open,
		config.DestinationKafka:    s.brokers.kafka.Open,
		config.DestinationRabbitMQ: s.brokers.rabbitmq.Open,
	}
}

// guardDialer dials through g: every address a broker client connects to,
// the seeds and those a cluster advertises alike, is judged at connect
// time, and a refusal wraps destination.ErrRefused (a Rejected attempt).
func guardDialer(g *deliver.Guard) *net.Dialer {
	return &net.Dialer{
		Timeout:   5 * time.Second,
		KeepAlive: 30 * time.Second,
		ControlContext: func(_ context.Context, _, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return refused{err}
			}
			if err := g.Check(ap.Addr()); err != nil {
				return refused{err}
			}
			return nil
		},
	}
}

// refused is the guard's refusal of a broker's address, which says what
// the guard said and is destination.ErrRefused.
type refused struct{ err error }

func (r refused) Error() string        { return r.err.Error() }
func (r refused) Unwrap() error        { return r.err }
func (r refused) Is(target error) bool { return target == destination.ErrRefused }

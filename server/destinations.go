package server

import (
	"context"
	"net"
	"net/netip"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	m := newDestinationMetrics(s.registry)
	return map[string]destination.Opener{
		destination.Webhook: m.wrap(destination.Webhook, func(ep destination.Endpoint) (destination.Destination, error) {
			return client.Open(ep), nil
		}),
		config.DestinationNATS:     m.wrap(config.DestinationNATS, s.brokers.nats.Open),
		config.DestinationKafka:    m.wrap(config.DestinationKafka, s.brokers.kafka.Open),
		config.DestinationRabbitMQ: m.wrap(config.DestinationRabbitMQ, s.brokers.rabbitmq.Open),
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

// destinationMetrics are the attempts by destination type, counted around
// each opened destination, below the engine (whose per-endpoint series do
// not carry the type).
type destinationMetrics struct {
	attempts *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newDestinationMetrics(reg prometheus.Registerer) *destinationMetrics {
	m := &destinationMetrics{
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_destination_attempts_total", Help: "Delivery attempts by destination type (webhook, nats, kafka, rabbitmq) and outcome class.",
		}, []string{"destination", "class"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hookjet_destination_attempt_duration_seconds", Help: "How long attempts took, up to the destination's answer, by destination type.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2.5, 12),
		}, []string{"destination"}),
	}
	reg.MustRegister(m.attempts, m.duration)
	return m
}

// wrap counts the attempts of the destinations open opens, as type typ.
func (m *destinationMetrics) wrap(typ string, open destination.Opener) destination.Opener {
	var byClass [destination.Auth + 1]prometheus.Counter
	for c := range byClass {
		byClass[c] = m.attempts.WithLabelValues(typ, destination.Class(c).String())
	}
	duration := m.duration.WithLabelValues(typ)
	return func(ep destination.Endpoint) (destination.Destination, error) {
		d, err := open(ep)
		if err != nil {
			return nil, err
		}
		return &metered{d: d, byClass: &byClass, duration: duration}, nil
	}
}

// metered is a destination whose attempts are counted.
type metered struct {
	d        destination.Destination
	byClass  *[destination.Auth + 1]prometheus.Counter
	duration prometheus.Observer
}

func (m *metered) Send(ctx context.Context, r destination.Request) destination.Result {
	res := m.d.Send(ctx, r)
	if res.Class >= 0 && int(res.Class) < len(m.byClass) {
		m.byClass[res.Class].Inc()
	}
	if res.Class != destination.Rejected {
		m.duration.Observe(res.Latency.Seconds())
	}
	return res
}

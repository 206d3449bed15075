package query

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/jetstream"
)

// Options are the parts Queries are built from. Every field is required
// except Log and Now.
type Options struct {
	Source   Source
	Requeue  Requeuer
	Gauges   GaugeSink
	JS       natsjs.JetStream
	NC       *nats.Conn // Ready: whether NATS is connected
	Ledger   Checker    // Ready: whether the state file answers
	Breakers *breaker.Registry
	Log      *slog.Logger     // nil: discarded
	Now      func() time.Time // nil: time.Now
}

// Checker says whether a store answers (dedupe.Ledger: the state file).
type Checker interface {
	Check() error
}

// Queries answer the operator's questions about the engine (see the
// package doc).
type Queries struct {
	src      Source
	requeue  Requeuer
	gauges   GaugeSink
	js       natsjs.JetStream
	nc       *nats.Conn
	ledger   Checker
	breakers *breaker.Registry
	log      *slog.Logger
	now      func() time.Time
}

// New returns the queries of o.
func New(o Options) *Queries {
	q := &Queries{
		src: o.Source, requeue: o.Requeue, gauges: o.Gauges, js: o.JS, nc: o.NC, ledger: o.Ledger,
		breakers: o.Breakers, log: o.Log, now: o.Now,
	}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	if q.now == nil {
		q.now = time.Now
	}
	return q
}

// InForce is the number of endpoints in force in this process: the config
// file's, the admin API's and those other processes share from their files.
func (q *Queries) InForce() int { return q.src.Process(q.now()).Endpoints }

// Ready reports whether NATS is connected, hookjet's streams exist and the
// state file answers.
func (q *Queries) Ready(ctx context.Context) error {
	if !q.nc.IsConnected() {
		return errors.New("nats not connected")
	}
	if err := q.ledger.Check(); err != nil {
		return err
	}
	for _, name := range []string{jetstream.EventsStream, jetstream.TasksStream, jetstream.DLQStream} {
		if _, err := q.js.Stream(ctx, name); err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	return nil
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

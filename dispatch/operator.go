package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/dispatch/epstate"
)

// Operator carries out the operator's actions that write into the
// delivery path: a test event (SendTest), the history sent again
// (Redeliver), a deleted endpoint's deliveries dropped (Discard) and
// breaker resets (ResetBreaker, WatchResets). They write tasks, whose
// format is the engine's, so they stay in package dispatch; the operator's
// questions, and dead-letter replays, are package query's.
type Operator struct {
	log      *slog.Logger
	now      func() time.Time
	js       natsjs.JetStream
	nc       *nats.Conn
	metrics  *Metrics
	breakers *breaker.Registry
	eps      endpointFinder  // the endpoints in force
	states   stateUpdater    // endpoint states (ResetBreaker lifts a hold)
	wake     func(id string) // starts endpoint id's drain now
	tasks    taskCounter     // counts an endpoint's tasks (Discard)
	own      ownEvents       // hookjet's own events (Redeliver: match.go's ownFor)
	done     context.Context // cancelled by Stop: WatchResets unsubscribes
	resets   resets          // this process's name in breaker resets (reset.go)
}

// stateUpdater changes an endpoint's shared state (endpoint_state.go).
type stateUpdater interface {
	Update(ctx context.Context, id string, fn func(*epstate.State) bool) error
	Purge(ctx context.Context, id string) error
}

// taskCounter counts the tasks waiting for an endpoint (query.Queries).
type taskCounter interface {
	Tasks(ctx context.Context, id string) (uint64, error)
}

// Operator carries out the operator's actions on this engine.
func (d *Dispatcher) Operator() *Operator { return d.operator }

// newOperator builds d's operator, which counts tasks with tasks: after
// d's state bucket.
func newOperator(d *Dispatcher, tasks taskCounter) *Operator {
	return &Operator{
		log: d.log, now: d.now, js: d.o.JS, nc: d.o.NC, metrics: d.o.Metrics, breakers: d.o.Breakers,
		eps: d, states: d.states, tasks: tasks, done: d.life.loopCtx, own: d.o.Operational,
		wake: func(id string) { d.drains.Note(id, time.Time{}) },
	}
}

// publish stores msg, bounded by ctx as well.
func (o *Operator) publish(ctx context.Context, msg *nats.Msg) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err := o.js.PublishMsg(ctx, msg)
	return err
}

// resets is the operator's part in breaker resets.
type resets struct {
	once   sync.Once
	origin string // names this process in the notices it publishes
}

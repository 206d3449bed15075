package operate

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch/epstate"
)

// Operator carries out the operator's actions that write into the
// delivery path: a test event (SendTest), the history sent again
// (Redeliver), a deleted endpoint's deliveries dropped (Discard) and
// breaker resets (ResetBreaker, WatchResets). They write tasks in the
// stored form package settle owns, and wake the endpoint's drain; none is
// on the delivery path.
type Operator struct {
	log       *slog.Logger
	now       func() time.Time
	js        natsjs.JetStream
	nc        *nats.Conn
	published prometheus.Counter
	breakers  Resetter
	eps       Endpoints
	states    States
	wake      func(id string)
	tasks     TaskCounter
	own       OwnEvents // hookjet's own events (Redeliver: ownFor)
	done      context.Context
	resets    resets // this process's name in breaker resets (reset.go)
}

// Options are what an Operator is built from; every field is required
// except Log and Now.
type Options struct {
	Log *slog.Logger
	Now func() time.Time // nil: time.Now
	JS  natsjs.JetStream
	NC  *nats.Conn
	// Published counts the messages it publishes
	// (hookjet_events_published_total).
	Published prometheus.Counter
	Breakers  Resetter
	Endpoints Endpoints // the endpoints in force
	States    States    // endpoint states (ResetBreaker lifts a hold, Discard drops one)
	Wake      func(id string)
	Tasks     TaskCounter
	// Done is cancelled by the engine's Stop: WatchResets unsubscribes.
	Done context.Context
	// Own recognises hookjet's own events (opsevent.Key); nil: no event of
	// a hookjet.* type is redelivered.
	Own OwnEvents
}

// OwnEvents recognises hookjet's own events and the endpoint each is about
// (opsevent.Key).
type OwnEvents interface {
	About(id, typ, tenant string, h map[string][]string, data []byte) (endpoint string, ok bool)
}

// Endpoints finds the settings of an endpoint in force by id (nil: none).
type Endpoints interface {
	Config(id string) *config.Endpoint
}

// Resetter closes an endpoint's breaker in this process and reports
// whether it was not closed (breaker.Registry).
type Resetter interface {
	Reset(id string) (wasOpen bool)
}

// States changes an endpoint's shared state (package epstate).
type States interface {
	Update(ctx context.Context, id string, fn func(*epstate.State) bool) error
	Purge(ctx context.Context, id string) error
}

// TaskCounter counts the tasks waiting for an endpoint (query.Queries).
type TaskCounter interface {
	Tasks(ctx context.Context, id string) (uint64, error)
}

// New builds an Operator.
func New(o Options) *Operator {
	op := &Operator{
		log: o.Log, now: o.Now, js: o.JS, nc: o.NC, published: o.Published, breakers: o.Breakers,
		eps: o.Endpoints, states: o.States, wake: o.Wake, tasks: o.Tasks, own: o.Own, done: o.Done,
	}
	if op.log == nil {
		op.log = slog.New(slog.DiscardHandler)
	}
	if op.now == nil {
		op.now = time.Now
	}
	return op
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

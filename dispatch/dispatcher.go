package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/catalog"
	"github.com/hookjet/hookjet/dispatch/consume"
	"github.com/hookjet/hookjet/dispatch/epstate"
	"github.com/hookjet/hookjet/dispatch/sources"
	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/routing"
	"github.com/hookjet/hookjet/transform"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/dispatch/drain"
	"github.com/hookjet/hookjet/dispatch/lane"
	"github.com/hookjet/hookjet/dispatch/query"
	"github.com/hookjet/hookjet/tracing"
)

// Options are the parts a Dispatcher is built from. Every field is required
// except FanoutNC, Log, Now, OnDeadLetter and Tracer.
type Options struct {
	NC *nats.Conn
	// FanoutNC is the connection the fan-out pulls and acks events on
	// (jetstream.Node.FanoutConn); nil: NC's.
	FanoutNC *nats.Conn
	JS       natsjs.JetStream
	// Destinations opens each endpoint's destination, by destination type
	// (destination.Webhook: the HTTP POST, package deliver). The engine
	// knows none of them by name.
	Destinations map[string]destination.Opener
	Breakers     *breaker.Registry
	Ledger       *dedupe.Ledger
	Metrics      *Metrics
	Log          *slog.Logger
	Config       *config.Config
	Now          func() time.Time               // nil: time.Now
	OnDeadLetter func(endpoint, eventID string) // test seam called after the DLQ copy is stored and before the source is settled; nil: nothing
	Tracer       *tracing.Tracer                // spans of attempts, dead letters and replays; nil: tracing off, at no cost
	Recorder     Recorder                       // the delivery log (dispatch/record.go); nil: off
	// Seen announces accepted event ids to the other processes and follows
	// theirs into Ledger (dispatch/seen.go); used with nats.url.
	Seen *jetstream.SeenIDs
	// Catalog is the event-type catalogue in force: the match stage
	// checks each matched event against it once (dispatch/match.go); nil:
	// nothing checked.
	Catalog *catalog.Live
}

// Dispatcher delivers events to endpoints with a fixed number of JetStream
// consumers, however many endpoints there are:
//
//   - one shared durable consumer of HOOKJET_EVENTS (the fan-out), pulled by
//     every hookjet process: each event is matched against the endpoint
//     table's in-memory index of every endpoint's patterns (package routing)
//     and delivered at once to each matching endpoint that can take it; the
//     event is acked when every delivery is settled. This is the common
//     case: one stored message and one ack per event, however many
//     endpoints it goes to.
//   - a delivery that cannot be settled now (its endpoint disabled, held by
//     Retry-After, its breaker open, its in-flight cap full, or a failed
//     attempt waiting for its retry) becomes a task in HOOKJET_TASKS on the
//     endpoint's own subject. Retries are JetStream message schedules: they
//     wait in the server, holding no consumer's ack slot.
//   - a short-lived consumer drains an endpoint's due tasks while the
//     endpoint can take them, at most 64 at a time per process (package
//     drain, which the engine serves through drain_engine.go).
//
// Endpoints are data: an endpoint that receives nothing costs its config,
// its index entries and its breaker state, and no goroutine, timer or
// consumer. Shutdown, as Stop documents: stop pulling, hand back buffered
// messages, wait for in-flight deliveries for the grace period, then cancel
// the rest.
type Dispatcher struct {
	o   Options
	log *slog.Logger
	now func() time.Time

	// The stages and rooms of the delivery path.
	fan    *fanout         // the fan-out and the match stage (fanout_room.go, match.go)
	gate   *admitter       // the admit stage and the workers (admit.go)
	send   *sendStage      // the shape and send stages (shape.go, attempt.go)
	settle *settler        // the settle stage (settle.go, outcome.go)
	rec    *recorder       // the delivery log's records (record.go)
	drains *drain.Drainer  // tasks and their drains (package drain; drain_engine.go)
	lane   *lane.Owner     // per-key ordering (package lane; lane_engine.go)
	states *epstate.States // disabled and held endpoints (package epstate)
	tasks  taskSpace       // HOOKJET_TASKS' bytes and bounds (bounds.go)
	jobs   *jobs           // background NATS work (tasks, dead letters)
	share  *poolShare      // divides the workers between the endpoints using them
	series *series         // the metrics' endpoint labels
	hour   hourStats       // outcomes over the last hour

	// Where endpoints come from, and the operator's side.
	src      *sources.Sources // the file, the API, other processes' files (package sources)
	table    *routing.Table   // the endpoints in force and the pattern index (its Runtime: table.go)
	queries  *query.Queries   // the operator's questions (package query; query_source.go)
	operator *Operator        // the operator's actions (operator.go)
	leftover Leftover         // what waited at start (drain_engine.go)

	life lifecycle // the engine's goroutines and contexts, and Stop's order

	mu sync.RWMutex // guards eps; never held while waiting
	// eps is the runtime state of every endpoint in the table.
	eps map[string]*endpoint
}

// endpoint is one endpoint's runtime state. Its settings are an immutable
// snapshot swapped on change, so deliveries in flight keep theirs while the
// in-flight cap, the rate limiter and the metric series stay the endpoint's
// own across a reload.
type endpoint struct {
	id      string
	set     atomic.Pointer[settings]
	slots   slots
	removed atomic.Bool
	// deleted: removed through the admin API, for every process; its
	// deliveries still in flight store no retry or task (no one would
	// take them, and an id created again would).
	deleted atomic.Bool
	last    atomic.Pointer[attempt.LastDelivery] // this process's last 2xx
	// backlog counts the tasks this process stored for the endpoint and
	// not yet consumed (see bounds.go): max_backlog applies to it.
	backlog      atomic.Int64
	backlogBytes atomic.Int64 // their size in HOOKJET_TASKS
	// busy counts the busy tasks it stored and not yet consumed (see
	// busyCause): none counts toward max_backlog.
	busy atomic.Int64
}

type settings struct {
	ep      *config.Endpoint        // the table's copy: never changed
	dest    destination.Destination // opened from ep (table.go)
	limiter *rate.Limiter
	expires time.Time // earliest SecretExpiry still ahead; zero: none
	// filter is ep's filter compiled (nil: none); a stored filter that no
	// longer compiles refuses every event (compileCode).
	filter *filter.Filter
	// script is ep's transform compiled (nil: none); scriptErr, when a
	// stored transform no longer compiles, dead-letters every delivery as
	// transform.
	script    *transform.Script
	scriptErr error
}

// NewDispatcher prepares a dispatcher; Start begins delivering.
func NewDispatcher(ctx context.Context, o Options) (*Dispatcher, error) {
	if o.Destinations[destination.Webhook] == nil {
		return nil, fmt.Errorf("dispatch: Options.Destinations has no %q opener", destination.Webhook)
	}
	cfg := o.Config
	d := &Dispatcher{
		o:      o,
		log:    o.Log,
		now:    o.Now,
		eps:    map[string]*endpoint{},
		share:  &poolShare{total: cfg.Worker.Concurrency, lazy: true},
		jobs:   newJobs(),
		tasks:  taskSpace{max: cfg.Streams.TasksMaxBytes},
		series: newSeries(o.Metrics, maxSeries(cfg)),
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.life.loopCtx, d.life.stopLoops = context.WithCancel(context.WithoutCancel(ctx))
	d.life.sendCtx, d.life.stopSends = context.WithCancel(context.WithoutCancel(ctx))
	kv, err := o.JS.KeyValue(ctx, jetstream.StateBucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", jetstream.StateBucket, err)
	}
	d.states = epstate.New(epstate.Options{
		KV: kv, NC: o.NC, Log: d.log, Now: d.now, Ctx: d.life.sendCtx, Stop: d.life.loopCtx, Background: &d.life.background,
		Wake: func(id string, at time.Time) { d.drains.Wake(id, at) },
	})
	d.rec = &recorder{out: o.Recorder, now: d.now, eps: d}
	d.settle = &settler{
		log: d.log, now: d.now, ctx: d.life.sendCtx, js: o.JS, ledger: o.Ledger, tasks: engineTasks{d}, states: d.states,
		rec: d.rec, series: d.series, tracer: o.Tracer, inflight: &d.life.inflight, onDeadLetter: o.OnDeadLetter,
	}
	d.fan = &fanout{
		log: d.log, now: d.now, js: o.JS, conn: fanoutConn(&o), metrics: o.Metrics, ledger: o.Ledger,
		eps: d, settle: d.settle, jobs: d.goJob, sendCtx: d.life.sendCtx, inflight: &d.life.inflight,
		maxMsg:         int(jetstream.MaxMsgSize(cfg)),
		unsettled:      make(chan struct{}, 2*cfg.Worker.Concurrency),
		unsettledBytes: consume.NewBudget(unsettledBytes),
		guards:         guards{in: map[*guard]struct{}{}},
	}
	d.send = &sendStage{
		log: d.log, now: d.now, ctx: d.life.sendCtx, maxPayload: cfg.Security.MaxPayloadBytes, fan: d.fan, breakers: o.Breakers,
		tracer: o.Tracer, rec: d.rec, series: d.series, hour: &d.hour, settle: d.settle,
		shape: &shaper{security: cfg.Security, concurrency: cfg.Worker.Concurrency},
	}
	d.gate = &admitter{
		now: d.now, states: d.states, breakers: o.Breakers, metrics: o.Metrics, send: d.send, park: d.settle.park, inflight: &d.life.inflight,
		global: make(chan struct{}, cfg.Worker.Concurrency), unsettled: cap(d.fan.unsettled),
	}
	d.fan.gate = d.gate
	d.drains = drain.New(drainEngine{d}, o.JS, d.log, d.now)
	d.lane = newLane(d)
	d.fan.ordered = laneEngine{d}
	d.table = routing.New(tableRuntime{d}, d.log)
	d.fan.match = matcher{index: d.table, eps: d, series: d.series, catalog: o.Catalog, invalid: o.Metrics.InvalidEvents}
	d.src = sources.New(d.table, o.Breakers, d.log, d.life.loopCtx, &d.life.background)

	d.queries = newQueries(d)
	d.operator = newOperator(d, d.queries)
	if cfg.NATS.URL != "" && o.Seen != nil {
		d.fan.shared = &sharedSeen{ids: o.Seen}
	}
	return d, nil
}

// Start upgrades a first-design layout if it finds one, loads endpoint
// states and watches them, applies the config's endpoints and makes sure the
// fan-out consumer exists. Nothing is pulled yet: Run starts that.
func (d *Dispatcher) Start(ctx context.Context) error {
	if err := d.states.Watch(ctx); err != nil {
		return err
	}
	if err := d.src.Apply(ctx, d.o.Config); err != nil {
		return err
	}
	d.fan.ackWait = fanoutAckWait(d.o.Config)
	d.fan.hold.Store(int64(d.fan.ackWait / 2))
	if err := migrate(ctx, d); err != nil {
		return err
	}
	cons, err := jetstream.EnsureFanoutConsumer(ctx, d.o.JS, d.fan.ackWait)
	if err != nil {
		return err
	}
	d.fan.floor.Store(cons.CachedInfo().AckFloor.Stream)
	d.fan.cons = cons
	d.noteLeftover(ctx)
	return nil
}

// Run starts the fan-out, the drains and the MaxDeliver safety net. Call it
// once every source of endpoints has been applied (WatchEndpoints,
// ShareConfigEndpoints): an event pulled before would find no endpoint it is
// for and be acked undelivered.
func (d *Dispatcher) Run(ctx context.Context) error {
	if err := d.runSafetyNet(ctx); err != nil {
		return err
	}
	if err := d.answerHeld(); err != nil { // held keys, for the other processes' views
		return err
	}
	if d.o.Config.NATS.URL != "" && d.o.NC != nil {
		// A network connection: it can be cut, and a cluster node can
		// fail with acks it took (ackproof.go).
		acks, err := consume.NewAckProof(d.fan.conn, time.Duration(d.fan.hold.Load()), d.log)
		if err != nil {
			return fmt.Errorf("fan-out ack answers: %w", err)
		}
		d.fan.acks = acks
	}
	d.life.background.Add(1)
	go func() {
		defer d.life.background.Done()
		d.drains.KeepAlive(d.life.sendCtx)
	}()
	// The lane's lease is sought once before the fan-out starts, so that a
	// process that takes it bounds its endpoints' entries from the first
	// event on (dispatch/lane, bound.go).
	ls := d.lane.FirstLease(ctx, d.life.loopCtx)
	d.life.loops.Add(5)
	go func() {
		defer d.life.loops.Done()
		d.fan.runGuards(d.life.loopCtx)
	}()
	go func() {
		defer d.life.loops.Done()
		d.lane.RunLease(d.life.loopCtx, ls)
	}()
	go func() {
		defer d.life.loops.Done()
		d.fan.runFanout(d.life.loopCtx, d.fan.cons)
	}()
	go func() {
		defer d.life.loops.Done()
		d.runHousekeeping(d.life.loopCtx)
	}()
	go func() {
		defer d.life.loops.Done()
		d.drains.Run(d.life.loopCtx)
	}()
	return nil
}

// current returns e's settings, re-deriving them once a rotated-out secret's
// grace has ended so that it stops signing everywhere.
func (d *Dispatcher) current(e *endpoint) *settings {
	s := e.set.Load()
	if s.expires.IsZero() || d.now().Before(s.expires) {
		return s
	}
	next, err := d.newSettings(s.ep, e)
	if err != nil {
		return s
	}
	e.set.CompareAndSwap(s, next)
	return e.set.Load()
}

// Stop stops the fan-out and the drains from pulling, hands back buffered
// messages, and waits up to grace for in-flight deliveries to finish; after
// that their requests are cancelled and their sources are returned to
// JetStream without counting an attempt. It also waits for the ledger to
// commit the deliveries answered 2xx (their callbacks settle the sources),
// so the ledger must still run: the caller stops it after Stop returns.
func (d *Dispatcher) Stop(grace time.Duration) {
	// The grace runs from now: the drains wait for their deliveries before
	// the loops return, and those must be cut off at the grace too.
	over := time.AfterFunc(grace, func() {
		d.log.Warn("grace period over; cancelling in-flight deliveries", "in_flight", d.gate.inFlightN.Load())
		d.life.stopSends()
	})
	d.life.stopLoops()
	d.life.loops.Wait()
	d.life.inflight.Wait()
	if d.fan.acks != nil {
		d.fan.acks.Close()
	}
	over.Stop()
	d.life.stopSends()
	d.send.shape.close()
	d.jobs.close()
	d.life.background.Wait()
}

// sleep waits for dur or until ctx is done.
func sleep(ctx context.Context, dur time.Duration) {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func jitter(upTo time.Duration) time.Duration {
	if upTo <= 0 {
		return 0
	}
	return rand.N(upTo)
}

// fanoutConn is the connection the fan-out pulls and acks events on.
func fanoutConn(o *Options) *nats.Conn {
	if o.FanoutNC != nil {
		return o.FanoutNC
	}
	return o.JS.Conn()
}

// engineTasks is the task store settlement hands deliveries to.
type engineTasks struct{ d *Dispatcher }

func (t engineTasks) reserve(dl *delivery, busy bool) bool { return t.d.reserve(dl, busy) }
func (t engineTasks) unreserve(dl *delivery, busy bool)    { t.d.unreserve(dl, busy) }
func (t engineTasks) stored(dl *delivery)                  { t.d.stored(dl) }
func (t engineTasks) noteRetry(endpoint, key string, at time.Time) {
	t.d.drains.NoteRetry(endpoint, key, at)
}
func (t engineTasks) noteDue(endpoint string) { t.d.drains.Note(endpoint, time.Time{}) }
func (t engineTasks) goJob(f func())          { t.d.goJob(f) }

// deadLetter is settlement's, for the task bounds (bounds.go).
func (d *Dispatcher) deadLetter(dl *delivery, reason string) { d.settle.deadLetter(dl, reason) }

// Sources is where the engine's endpoints come from: the config file, the
// admin API and the other processes' files.
func (d *Dispatcher) Sources() *sources.Sources { return d.src }

// lifecycle is what Stop stops, in order: the loops (pulls), the deliveries
// in flight (with the grace period), then the background work.
type lifecycle struct {
	loopCtx    context.Context // cancelled by Stop: loops stop pulling
	stopLoops  context.CancelFunc
	sendCtx    context.Context // cancelled when the grace period is over
	stopSends  context.CancelFunc
	loops      sync.WaitGroup
	inflight   sync.WaitGroup
	background sync.WaitGroup
}

// taskSpace is HOOKJET_TASKS as the engine bounds it (bounds.go).
type taskSpace struct {
	used drain.TaskBytes // this process's count of its bytes
	max  int64           // streams.tasks_max_bytes
	// age is its MaxAge as last read or raised (coverTaskAge): 0 not read
	// yet, negative unlimited.
	age atomic.Int64
}

package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/catalog"
	"github.com/hookjet/hookjet/dispatch/consume"
	"github.com/hookjet/hookjet/dispatch/epstate"
	"github.com/hookjet/hookjet/dispatch/operate"
	"github.com/hookjet/hookjet/dispatch/opsevent"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/dispatch/sources"
	"github.com/hookjet/hookjet/dispatch/upgrade"
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
	Recorder     Recorder                       // the delivery log (package dispatch/settle, record.go); nil: off
	// Seen announces accepted event ids to the other processes and follows
	// theirs into Ledger (dispatch/seen.go); used with nats.url.
	Seen *jetstream.SeenIDs
	// Operational publishes hookjet's own events (hookjet.endpoint.*,
	// hookjet.dead_letter) at the moments of hookjet.ops.*, and the match
	// stage recognises them by its key (package opsevent); the caller runs
	// it. nil: none are published, and every event of a hookjet.* type
	// goes to no one.
	Operational *opsevent.Publisher
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
	fan    *fanout    // the fan-out and the match stage (fanout_room.go, match.go)
	gate   *admitter  // the admit stage and the workers (admit.go)
	send   *sendStage // the shape and send stages (shape.go, attempt.go)
	settle settler    // the settle stage (package settle)
	net    *settle.SafetyNet
	drains *drain.Drainer  // tasks and their drains (package drain; drain_engine.go)
	lane   *lane.Owner     // per-key ordering (package lane; lane_engine.go)
	states *epstate.States // disabled and held endpoints (package epstate)
	tasks  *settle.Space   // HOOKJET_TASKS' bytes and bounds (package settle)
	jobs   *jobs           // background NATS work (tasks, dead letters)
	share  *poolShare      // divides the workers between the endpoints using them
	series *settle.Series  // the metrics' endpoint labels
	hour   hourStats       // outcomes over the last hour

	// Where endpoints come from, and the operator's side.
	src      *sources.Sources  // the file, the API, other processes' files (package sources)
	table    *routing.Table    // the endpoints in force and the pattern index (its Runtime: table.go)
	queries  *query.Queries    // the operator's questions (package query; query_source.go)
	operator *operate.Operator // the operator's actions (package operate)
	leftover Leftover          // what waited at start (drain_engine.go)

	life lifecycle // the engine's goroutines and contexts, and Stop's order

	mu sync.RWMutex // guards eps; never held while waiting
	// eps is the runtime state of every endpoint in the table.
	eps map[string]*endpoint
	// ordered counts the endpoints in eps that order by key (table.go), so
	// that asking whether any does costs nothing per endpoint.
	ordered atomic.Int64
	// backlogged holds the endpoints with tasks waiting (query_source.go).
	backlogged settle.Backlogged
}

// endpoint is one endpoint's runtime state. Its settings are an immutable
// snapshot swapped on change, so deliveries in flight keep theirs while the
// in-flight cap, the rate limiter and the metric series stay the endpoint's
// own across a reload.
type endpoint struct {
	// settle.Endpoint is settlement's part: the id, whether it was
	// removed or deleted, and its waiting deliveries' counts.
	settle.Endpoint
	set   atomic.Pointer[settings]
	slots slots
	last  atomic.Pointer[attempt.LastDelivery] // this process's last 2xx
}

// newEndpoint is the runtime of endpoint id, without settings yet.
func newEndpoint(id string) *endpoint {
	e := &endpoint{}
	e.ID = id
	return e
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
		tasks:  settle.NewSpace(cfg.Streams.TasksMaxBytes),
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
	var announce epstate.Announcer
	if o.Operational != nil {
		announce = announcer{d: d, pub: o.Operational}
	}
	d.states = epstate.New(epstate.Options{
		KV: kv, NC: o.NC, Announcer: announce, Log: d.log, Now: d.now, Ctx: d.life.sendCtx, Stop: d.life.loopCtx, Background: &d.life.background,
		Wake: func(id string, at time.Time) { d.drains.Wake(id, at) },
	})
	d.drains = drain.New(drainEngine{d}, o.JS, d.log, d.now)
	d.settle = settler{settle.New(settle.Options{
		Log: d.log, Now: d.now, Ctx: d.life.sendCtx, JS: o.JS, Ledger: o.Ledger, Space: d.tasks, Drains: d.drains, States: d.states,
		Records: settle.NewRecords(o.Recorder, d.now, endpointConfigs{d}), Series: d.series, Tracer: o.Tracer,
		Inflight: &d.life.inflight, Jobs: d.goJob, OnDeadLetter: o.OnDeadLetter,
	})}
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
		tracer: o.Tracer, rec: d.settle.Records(), series: d.series, hour: &d.hour, settle: d.settle,
		shape: &shaper{security: cfg.Security, concurrency: cfg.Worker.Concurrency},
	}
	d.gate = &admitter{
		now: d.now, states: d.states, breakers: o.Breakers, metrics: o.Metrics, send: d.send, park: d.settle.park, inflight: &d.life.inflight,
		global: make(chan struct{}, cfg.Worker.Concurrency), unsettled: cap(d.fan.unsettled),
	}
	d.fan.gate = d.gate
	d.lane = newLane(d)
	d.fan.ordered = laneEngine{d}
	d.table = routing.New(tableRuntime{d}, d.log)
	d.fan.match = matcher{index: d.table, eps: d, series: d.series, own: o.Operational, catalog: o.Catalog, invalid: o.Metrics.InvalidEvents}
	d.net = &settle.SafetyNet{JS: o.JS, Stage: d.settle.Stage, Index: d.table, Ledger: o.Ledger, Errors: o.Metrics.SafetyNetErrors, Log: d.log}
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
	wake := func(id string) { d.drains.Note(id, time.Time{}) }
	if err := upgrade.Run(ctx, upgrade.Options{
		JS: d.o.JS, Ledger: d.o.Ledger, States: d.states, Publish: d.settle.Publish, Wake: wake, AckWait: d.fan.ackWait, Log: d.log, Now: d.now,
	}); err != nil {
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
	if err := d.net.Start(ctx, d.life.loopCtx, &d.life.background); err != nil {
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

// fanoutConn is the connection the fan-out pulls and acks events on.
func fanoutConn(o *Options) *nats.Conn {
	if o.FanoutNC != nil {
		return o.FanoutNC
	}
	return o.JS.Conn()
}

// Recorder takes the delivery log's records (package jetstream's LogWriter
// stores them in HOOKJET_LOG). Record must never block: the engine calls it
// on the delivery path.
type Recorder interface {
	Record(attempt.Record)
}

// settler is the settle stage (package settle) as the engine's stages
// call it, with the engine's deliveries.
type settler struct{ *settle.Stage }

func (t settler) park(dl *delivery, cause string)        { t.Park(&dl.Delivery, cause) }
func (t settler) deadLetter(dl *delivery, reason string) { t.DeadLetter(&dl.Delivery, reason) }
func (t settler) overflow(dl *delivery, why string)      { t.Overflow(&dl.Delivery, why) }
func (t settler) carryOut(dl *delivery, adm *admission, act settle.Action) {
	t.CarryOut(&dl.Delivery, adm, act)
}

// endpointConfigs is the endpoints in force as settlement finds them.
type endpointConfigs struct{ d *Dispatcher }

func (x endpointConfigs) Config(id string) *config.Endpoint {
	if e := x.d.endpoint(id); e != nil {
		return e.set.Load().ep
	}
	return nil
}

// newSeries labels the endpoints' series of m, at most max of their own.
func newSeries(m *Metrics, max int) *settle.Series {
	return settle.NewSeries(settle.Counters{
		Attempts: m.Attempts, FirstAttempts: m.FirstAttempts, AttemptDuration: m.AttemptDuration, DeadLetters: m.DeadLetters,
		Deferrals: m.Deferrals, Filtered: m.Filtered, FilterErrors: m.FilterErrors, Forget: m.forget,
	}, max)
}

func maxSeries(cfg *config.Config) int {
	if cfg.Metrics.MaxEndpointSeries > 0 {
		return cfg.Metrics.MaxEndpointSeries
	}
	return 1000
}

// countDeferral counts a deferral of e's delivery (the drains' and the
// lane's call; settlement counts through its series).
func (d *Dispatcher) countDeferral(e *endpoint, cause string) {
	d.series.CountDeferral(&e.Endpoint, cause)
}

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

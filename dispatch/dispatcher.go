package dispatch

import (
	"context"
	"fmt"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/routing"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/dispatch/drain"
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
	o        Options
	log      *slog.Logger
	now      func() time.Time
	stateKV  natsjs.KeyValue
	shared   *sharedSeen   // nil with the embedded server: one process, the local ledger suffices
	global   chan struct{} // worker.concurrency: requests in flight
	share    *poolShare    // divides global between the endpoints using it
	waitingN atomic.Int32  // fan-out deliveries waiting for an endpoint's slot
	// fastWaitingN: those waiting past waitingN's bounds for an endpoint
	// that frees its slots fast (startWaiting).
	fastWaitingN atomic.Int32
	// workerWaits counts fan-out deliveries waiting for a worker (launchSoon).
	workerWaits atomic.Int32
	jobs        *jobs           // background NATS work (tasks, dead letters)
	guards      guards          // fan-out deliveries in flight (guard.go)
	tasksUsed   drain.TaskBytes // HOOKJET_TASKS bytes (bounds.go)
	tasksMax    int64           // streams.tasks_max_bytes
	// tasksAge is HOOKJET_TASKS' MaxAge as last read or raised
	// (coverTaskAge): 0 not read yet, negative unlimited.
	tasksAge  atomic.Int64
	unsettled chan struct{} // fan-out events not yet settled in this process
	// unsettledBytes bounds their payload bytes.
	unsettledBytes *byteBudget
	maxPayload     int            // security.max_payload_bytes; SIGHUP reloads endpoints only
	table          *routing.Table // the endpoints in force and the pattern index (Install, Uninstall: endpoint.go)
	series         *series
	drains         *drain.Drainer // the tasks' drains (package drain, drain_engine.go)
	lane           *lane          // per-key ordering (lane.go)

	loopCtx    context.Context // cancelled by Stop: loops stop pulling
	stopLoops  context.CancelFunc
	sendCtx    context.Context // cancelled when the grace period is over
	stopSends  context.CancelFunc
	loops      sync.WaitGroup
	inflight   sync.WaitGroup
	inFlightN  atomic.Int64
	background sync.WaitGroup

	mu sync.RWMutex // guards the fields below; never held while waiting
	// eps is the runtime state of every endpoint in the table.
	eps    map[string]*endpoint
	cfg    *config.Config
	states map[string]endpointState

	fanoutAckWait time.Duration
	// fanoutHold (nanoseconds) is how long after its pull a fan-out
	// delivery may still be attempted: half of fanoutAckWait (late).
	fanoutHold atomic.Int64
	acks       *ackProof // with nats.url, from Run; nil when embedded (ackproof.go)
	// fanoutFloor is the fan-out consumer's ack floor when last looked at
	// (start, and every gauge refresh): a fan-out consumer deleted from
	// under hookjet starts again after it.
	fanoutFloor atomic.Uint64
	fanoutCons  natsjs.Consumer // made by Start, pulled by Run
	hour        hourStats
	cfgStore    *jetstream.EndpointStore // shared config endpoints; nil until ShareConfigEndpoints
	shareMu     sync.Mutex               // guards published and unshare
	published   map[string]string        // digests of the config endpoints last stored in the bucket, by id
	unshare     map[string]bool          // removed config endpoints not yet deleted from the bucket
	applied     routing.Revisions        // API endpoint revisions in force (dispatch/apply.go)
	apiSource   apiSource                // where WatchEndpoints resolves API endpoints from; guarded by applied's lock
	resets      resets                   // breaker resets from other processes (dispatch/reset.go)
	rec         recorded                 // the delivery log's last test per endpoint (dispatch/record.go)
	leftover    Leftover                 // what waited at start (dispatch/drain_engine.go)

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
}

// NewDispatcher prepares a dispatcher; Start begins delivering.
func NewDispatcher(ctx context.Context, o Options) (*Dispatcher, error) {
	if o.Destinations[destination.Webhook] == nil {
		return nil, fmt.Errorf("dispatch: Options.Destinations has no %q opener", destination.Webhook)
	}
	cfg := o.Config
	d := &Dispatcher{
		o:              o,
		log:            o.Log,
		now:            o.Now,
		cfg:            cfg,
		eps:            map[string]*endpoint{},
		unshare:        map[string]bool{},
		states:         map[string]endpointState{},
		global:         make(chan struct{}, cfg.Worker.Concurrency),
		share:          &poolShare{total: cfg.Worker.Concurrency, lazy: true},
		jobs:           newJobs(),
		guards:         guards{in: map[*guard]struct{}{}},
		tasksMax:       cfg.Streams.TasksMaxBytes,
		unsettled:      make(chan struct{}, 2*cfg.Worker.Concurrency),
		unsettledBytes: newByteBudget(unsettledBytes),
		maxPayload:     cfg.Security.MaxPayloadBytes,
		series:         newSeries(o.Metrics, maxSeries(cfg)),
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	d.drains = drain.New(drainEngine{d}, o.JS, d.log, d.now)
	d.lane = newLane(d)
	d.table = routing.New(tableRuntime{d}, d.log)
	var err error
	if d.stateKV, err = o.JS.KeyValue(ctx, jetstream.StateBucket); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", jetstream.StateBucket, err)
	}
	if cfg.NATS.URL != "" && o.Seen != nil {
		d.shared = &sharedSeen{ids: o.Seen}
	}
	d.loopCtx, d.stopLoops = context.WithCancel(context.WithoutCancel(ctx))
	d.sendCtx, d.stopSends = context.WithCancel(context.WithoutCancel(ctx))
	return d, nil
}

// Start upgrades a first-design layout if it finds one, loads endpoint
// states and watches them, applies the config's endpoints and makes sure the
// fan-out consumer exists. Nothing is pulled yet: Run starts that.
func (d *Dispatcher) Start(ctx context.Context) error {
	if err := d.watchStates(ctx); err != nil {
		return err
	}
	if err := d.Apply(ctx, d.o.Config); err != nil {
		return err
	}
	d.fanoutAckWait = fanoutAckWait(d.o.Config)
	d.fanoutHold.Store(int64(d.fanoutAckWait / 2))
	if err := migrate(ctx, d); err != nil {
		return err
	}
	cons, err := jetstream.EnsureFanoutConsumer(ctx, d.o.JS, d.fanoutAckWait)
	if err != nil {
		return err
	}
	d.fanoutFloor.Store(cons.CachedInfo().AckFloor.Stream)
	d.fanoutCons = cons
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
		acks, err := newAckProof(d.fanoutConn(), time.Duration(d.fanoutHold.Load()), d.log)
		if err != nil {
			return fmt.Errorf("fan-out ack answers: %w", err)
		}
		d.acks = acks
	}
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		d.drains.KeepAlive(d.sendCtx)
	}()
	// The lane's lease is sought once before the fan-out starts, so that a
	// process that takes it bounds its endpoints' entries from the first
	// event on (lane_bound.go).
	ls := d.lane.firstLease(ctx, d.loopCtx)
	d.loops.Add(5)
	go func() {
		defer d.loops.Done()
		d.runGuards(d.loopCtx)
	}()
	go func() {
		defer d.loops.Done()
		d.lane.runLease(d.loopCtx, ls)
	}()
	go func() {
		defer d.loops.Done()
		d.runFanout(d.loopCtx, d.fanoutCons)
	}()
	go func() {
		defer d.loops.Done()
		d.runHousekeeping(d.loopCtx)
	}()
	go func() {
		defer d.loops.Done()
		d.drains.Run(d.loopCtx)
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
		d.log.Warn("grace period over; cancelling in-flight deliveries", "in_flight", d.inFlightN.Load())
		d.stopSends()
	})
	d.stopLoops()
	d.loops.Wait()
	d.inflight.Wait()
	if d.acks != nil {
		d.acks.Close()
	}
	over.Stop()
	d.stopSends()
	d.jobs.close()
	d.background.Wait()
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
func (d *Dispatcher) fanoutConn() *nats.Conn {
	if d.o.FanoutNC != nil {
		return d.o.FanoutNC
	}
	return d.o.JS.Conn()
}

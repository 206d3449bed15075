package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lmittmann/tint"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	bolt "go.etcd.io/bbolt"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookjet/hookjet/admin"
	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/console"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/deliver"
	"github.com/hookjet/hookjet/dispatch"
	"github.com/hookjet/hookjet/dispatch/operate"
	"github.com/hookjet/hookjet/dispatch/opsevent"
	"github.com/hookjet/hookjet/dispatch/sources"
	"github.com/hookjet/hookjet/internal/memtrim"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/outbox"
	"github.com/hookjet/hookjet/reach"
	"github.com/hookjet/hookjet/seal"
	"github.com/hookjet/hookjet/state"
	"github.com/hookjet/hookjet/tracing"
)

// NewLogger returns the logger cfg asks for: tint text (coloured only on a
// terminal) or JSON.
func NewLogger(cfg config.Log, w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	_ = level.UnmarshalText([]byte(cfg.Level))
	if cfg.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: level}))
	}
	return slog.New(tint.NewTextHandler(w, &tint.Options{Level: level, TimeFormat: time.DateTime, NoColor: !isTerminal(w)}))
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Options are test seams and knobs of a Server that are not configuration.
type Options struct {
	Log *slog.Logger
	// Registry receives hookjet's metrics; nil: a new registry.
	Registry *prometheus.Registry
	// OnDeadLetter is called between storing a dead letter and removing the
	// original (crash tests).
	OnDeadLetter func(endpoint, eventID string)
	// Resolver replaces the DNS resolver used for deliveries.
	Resolver *net.Resolver
	// TracerProvider receives the delivery spans (tests pass an SDK provider
	// with an in-memory exporter); the caller shuts it down. Nil: the
	// provider tracing.Setup builds from cfg.Tracing and Getenv's OTEL_*
	// variables, or none (tracing off).
	TracerProvider trace.TracerProvider
	// Getenv reads the OTEL_* variables; nil: none are set.
	Getenv func(string) string
	// ConfigPath names the config file in the admin API's answers about
	// endpoints it owns; empty: "the config file".
	ConfigPath string
}

// Server is a running hookjet: NATS (embedded or not), state, dispatcher,
// endpoint watches, outbox relay, inbound gateway and admin API. Shutdown
// stops it in order: stop the inbound gateway and the publish API (requests
// in flight are stored and answered), stop watching endpoints, stop pulling and finish or return in-flight
// deliveries within the grace period, stop the admin API (with the console)
// and the portal listener, then (abort) the
// outbox relay, the ledger (flushing its acks), the breakers (flushing their
// state), tracing, NATS, the state file and the embedded server.
type Server struct {
	cfgMu sync.Mutex // guards cfg, which Reload replaces
	// cfg is the configuration in force but for its endpoints (nil once
	// started): the dispatcher's endpoint table holds those.
	cfg *config.Config

	log *slog.Logger
	// guard and strictGuard are the SSRF guards deliveries dial through:
	// the operator's endpoints', and those of endpoints with a tenant.
	guard, strictGuard *deliver.Guard
	node               *jetstream.Node // the embedded server (or none) and the connection
	db                 *bolt.DB
	disp               *dispatch.Dispatcher
	admin              *http.Server
	adminLn            net.Listener
	handler            *startingHandler // the admin API once started
	registry           *prometheus.Registry
	client             *deliver.Client
	brokers            *brokers // the broker destinations' openers and connections
	ledger             *dedupe.Ledger
	// The delivery log's writer and reader (server/deliverylog.go); nil when
	// log.enabled is false.
	logw *jetstream.LogWriter
	// tally counts attempts per minute in HOOKJET_COUNTS, for the
	// summary's last-hour figures (server/deliverylog.go).
	tally *jetstream.Tally
	logr  *jetstream.LogReader
	logx  *jetstream.LogIndex
	// evx is the event log's list index (server/events.go).
	evx *jetstream.EventIndex
	// seen announces the ids this process accepts and follows every
	// process's into the ledger (HOOKJET_SEEN).
	seen *jetstream.SeenIDs
	// stopTracing flushes and stops the tracer provider Start built; nil
	// when there is none (tracing off, or Options.TracerProvider given).
	stopTracing func(context.Context) error
	// stopWatch ends the watches of endpoints stored in KV buckets.
	stopWatch func()
	// store holds the endpoints of the admin API (Reload re-resolves them
	// when the defaults change).
	store *jetstream.EndpointStore
	// outbox is the in-process outbox relay (outbox.dsn set; server/outbox.go).
	outbox     *outbox.Relay
	stopOutbox func()
	// durability is how the streams are stored (server/durability.go).
	durability jetstream.Durability
	// inbound is the inbound gateway (inbound.listen set; server/inbound.go).
	inbound *inboundServer
	// publish is the publish API (server/publish.go).
	publish *publishServer
	// catalog is the event-type catalogue in force (server/catalog.go).
	catalog *catalogServer

	// portal serves portal.listen (server/console.go); nil without one.
	portal    *http.Server
	portalLn  net.Listener
	portalRun *owned
	secretKey []byte // security.secret_key, loaded or generated
	console   *console.Console

	// The goroutines the Server owns, each stopped by its own stop.
	stateSync, ledgerRun, breakersRun, opsRun, gauges, adminRun *owned
	once                                                        sync.Once
	stopped                                                     bool // the dispatcher has been stopped
	marked                                                      bool // the run marker is written (server/marker.go)
}

// owned is a goroutine a Server started: stop cancels its context and waits
// for it to return. A nil *owned stops nothing.
type owned struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// goOwned runs fn on a goroutine with a context of its own, detached from
// parent's cancellation: the Server decides when each one stops.
func goOwned(parent context.Context, fn func(context.Context)) *owned {
	ctx, cancel := context.WithCancel(context.WithoutCancel(parent))
	o := &owned{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(o.done)
		fn(ctx)
	}()
	return o
}

func (o *owned) stop() {
	if o != nil {
		o.cancel()
		<-o.done
	}
}

// Start brings hookjet up and returns once it is delivering and its admin API
// listens. On error everything already started is stopped again.
func Start(ctx context.Context, cfg *config.Config, o Options) (_ *Server, err error) {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	own := *cfg // the server's own copy: its Endpoints go once the endpoint table holds them
	cfg = &own
	s := &Server{cfg: cfg, log: log, registry: o.Registry}
	defer func() {
		if err != nil {
			s.abort()
		}
	}()
	if err := s.listenAdmin(); err != nil {
		return nil, err
	}
	if err := s.openState(ctx); err != nil {
		return nil, err
	}
	prev := s.markRunning() // server/marker.go
	s.starting("connecting to NATS")
	if err := s.connect(); err != nil {
		return nil, err
	}
	js := s.node.JetStream()
	// A cluster that is recovering may take a while to answer: every
	// start-up call is retried with a short timeout and backoff (and
	// logged) for up to two minutes before start-up gives up.
	setupCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s.starting("creating streams and buckets in JetStream (retried until it answers; see the log)")
	if err := jetstream.EnsureStreams(setupCtx, js, cfg, log); err != nil {
		return nil, err
	}
	if err := s.startCatalog(setupCtx); err != nil { // server/catalog.go
		return nil, err
	}
	s.starting("starting delivery")
	if err := s.startEngine(ctx, setupCtx, o); err != nil {
		return nil, err
	}
	if prev != nil {
		s.logUnclean(prev, s.disp.LeftAtStart())
	}
	store, err := s.watchEndpoints(ctx, setupCtx)
	if err != nil {
		return nil, err
	}
	s.store = store
	s.durability = readDurability(setupCtx, cfg, s.node, log) // server/durability.go
	// Pull only now: every endpoint (file, API, other processes') is known.
	if err := s.disp.Run(setupCtx); err != nil {
		return nil, err
	}
	if !cfg.Outbox.DSN.IsZero() { // the outbox relay in-process: server/outbox.go
		if s.outbox, s.stopOutbox, err = startOutbox(ctx, cfg, s.node, log, s.registry, s.durability.EventsHold()); err != nil {
			return nil, err
		}
	}
	if err := s.startInbound(setupCtx); err != nil { // server/inbound.go
		return nil, err
	}
	if err := s.startPublish(); err != nil { // server/publish.go
		return nil, err
	}
	if err := s.startAdmin(store, o); err != nil {
		return nil, err
	}
	// The endpoint table holds the file's endpoints now: the parsed copy
	// (35 MB at 100,000) is not kept beside it.
	fromFile := len(cfg.Endpoints)
	cfg.Endpoints = nil
	// Start-up garbage (the parsed config, the endpoint batches) is a few
	// times what hookjet keeps: with 100,000 endpoints it would sit in RSS
	// for minutes. The dispatcher does the same once it has stored the
	// file's endpoints for other processes.
	memtrim.Release()
	natsURL := cfg.NATS.URL
	if s.node.Embedded() {
		natsURL = s.node.ClientURL() + " (embedded)"
	}
	log.Info("hookjet serving", "version", Version, "nats", natsURL, "admin", "http://"+s.adminLn.Addr().String(), "endpoints", s.disp.Queries().InForce(), "from_file", fromFile, "data_dir", cfg.DataDir)
	return s, nil
}

// openState opens state.db and starts its sync policy.
func (s *Server) openState(ctx context.Context) error {
	if err := os.MkdirAll(s.cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("data_dir: %w", err)
	}
	db, err := state.Open(filepath.Join(s.cfg.DataDir, "state.db"), 2*time.Second)
	if err != nil {
		return err
	}
	s.db = db
	if _, lazy := s.cfg.NATS.SyncInterval(); !lazy || s.cfg.NATS.URL != "" {
		// nats.sync: always: every commit (a ledger group commit, a
		// breaker flush) is fsynced by bbolt, data pages before the meta
		// page, so a power cut leaves a consistent file.
		return nil
	}
	// A lazy nats.sync trades durability for speed: commits go to the
	// page cache and the file is fdatasynced every second
	// (state.SyncEvery).
	db.NoSync = true
	s.stateSync = goOwned(ctx, func(ctx context.Context) { state.SyncEvery(ctx, db, time.Second, s.log) })
	return nil
}

// connect starts the embedded server when there is no nats.url, connects,
// and checks that events fit the server's max_payload with hookjet's
// headers.
func (s *Server) connect() error {
	cfg := s.cfg
	var err error
	if s.node, err = jetstream.OpenNode(cfg.NATS, cfg.DataDir, "hookjet", s.log); err != nil {
		return err
	}
	if d, lazy := cfg.NATS.SyncInterval(); lazy && cfg.NATS.URL == "" {
		s.log.Warn("nats.sync is a lazy interval: the embedded server acknowledges events before they are on disk, and a power cut or kernel crash loses the events acknowledged in the last interval (outbox rows are kept that long after their PubAck); nats.sync: always fsyncs each event before its PubAck", "nats.sync", d.String())
	}
	if err := checkPayloadHeadroom(cfg, s.node.MaxPayload()); err != nil {
		if cfg.Security.MaxPayloadBytes != config.Default().Security.MaxPayloadBytes {
			return err
		}
		// The default against a server with a smaller max_payload (1 MB
		// by default): lower it to fit rather than refuse to start.
		cfg.Security.MaxPayloadBytes = int(s.node.MaxPayload() - payloadHeadroom)
		s.log.Warn("security.max_payload_bytes lowered to fit the NATS server's max_payload with hookjet's headers", "max_payload_bytes", cfg.Security.MaxPayloadBytes, "server_max_payload", s.node.MaxPayload())
	}
	return nil
}

// startEngine builds the metrics, tracing, HTTP client, breakers, ledger and
// dispatcher, and starts delivering.
func (s *Server) startEngine(ctx, setupCtx context.Context, o Options) error {
	cfg, log := s.cfg, s.log
	if s.registry == nil {
		s.registry = prometheus.NewRegistry()
		s.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	metrics := dispatch.NewMetrics(s.registry)
	// The caller's tracer provider, or the one config and OTEL_* ask for.
	tp := o.TracerProvider
	if tp == nil {
		var err error
		var stop func(context.Context) error
		if tp, stop, err = tracing.Setup(ctx, cfg.Tracing, o.Getenv); err != nil {
			return fmt.Errorf("tracing: %w", err)
		}
		s.stopTracing = stop
	}
	if err := s.startLog(setupCtx); err != nil { // the delivery log: server/deliverylog.go
		return err
	}
	if err := s.startTally(setupCtx); err != nil {
		return err
	}
	if err := s.startEventIndex(); err != nil { // the event list: server/events.go
		return err
	}
	s.guard, s.strictGuard = deliver.NewGuard(cfg.Security.AllowPrivateNetworks, cfg.Security.Prefixes()), tenantGuard(cfg)
	s.brokers = newBrokers(s.guard, s.strictGuard)
	var egress *url.URL
	if cfg.Security.EgressProxy != "" {
		var err error
		if egress, err = reach.ParseProxy(cfg.Security.EgressProxy); err != nil { // validated: cannot fail
			return fmt.Errorf("security.egress_proxy: %w", err)
		}
	}
	s.client = deliver.NewClient(deliver.ClientOptions{
		Guard:        s.guard,
		StrictGuard:  s.strictGuard,
		EgressProxy:  egress,
		HTTPSOnly:    cfg.Security.HTTPSOnly,
		UserAgent:    UserAgent(),
		Resolver:     o.Resolver,
		ExcerptBytes: cfg.Log.ResponseBytes,
	})
	var disp atomic.Pointer[dispatch.Dispatcher]
	breakers, err := breaker.NewRegistry(s.db,
		breaker.WithLogger(log),
		breaker.WithOnTransition(func(t breaker.Transition) {
			if d := disp.Load(); d != nil {
				d.OnBreakerTransition(t)
			}
		}))
	if err != nil {
		return err
	}
	if s.ledger, err = dedupe.NewLedger(s.db, cfg.Dedupe.TTL, dedupe.WithBatch(1000, 2*time.Millisecond), dedupe.WithLogger(log)); err != nil {
		return err
	}
	s.ledgerRun = goOwned(ctx, s.ledger.Run)
	// Ids accepted by every process, followed into the ledger (HOOKJET_SEEN).
	if s.seen, err = jetstream.OpenSeenIDs(s.node.JetStream(), s.ledger, log); err != nil {
		return err
	}
	s.breakersRun = goOwned(ctx, breakers.Run)
	ops, err := s.operational(ctx)
	if err != nil {
		return err
	}
	d, err := dispatch.NewDispatcher(setupCtx, dispatch.Options{
		Catalog: s.catalog.live,
		NC:      s.node.Conn(), FanoutNC: s.node.FanoutConn(), JS: s.node.JetStream(), Destinations: s.destinations(), Breakers: breakers, Ledger: s.ledger,
		Metrics: metrics, Log: log, Config: cfg, OnDeadLetter: o.OnDeadLetter,
		Tracer: tracing.New(tp), Recorder: s.recorder(), Seen: s.seen, Operational: ops,
	})
	if err != nil {
		return err
	}
	s.disp = d
	disp.Store(d)
	if err := d.Start(setupCtx); err != nil {
		return err
	}
	if err := d.Operator().WatchResets(); err != nil { // breaker resets of the other processes
		return err
	}
	s.gauges = goOwned(ctx, func(ctx context.Context) { d.Queries().RunGauges(ctx, 5*time.Second) })
	return nil
}

// operational loads the secret key (security.secret_key or the generated
// one) and starts the publisher of hookjet's own events, whose marks are
// made with a key derived from it (package opsevent).
func (s *Server) operational(ctx context.Context) (*opsevent.Publisher, error) {
	key, err := seal.LoadSecretKey(s.cfg)
	if err != nil {
		return nil, err
	}
	s.secretKey = key
	ops := opsevent.New(opsevent.Options{Store: s.node.JetStream(), Key: opsevent.NewKey(key), Log: s.log})
	s.opsRun = goOwned(ctx, ops.Run)
	return ops, nil
}

// watchEndpoints applies the endpoints stored through the admin API (and,
// with nats.url, the other processes' config endpoints) and returns the API
// endpoints' store.
func (s *Server) watchEndpoints(ctx, setupCtx context.Context) (*jetstream.EndpointStore, error) {
	cfg, js, key := s.cfg, s.node.JetStream(), s.secretKey // loaded by operational
	store, err := jetstream.OpenEndpointStore(setupCtx, js, key, cfg.Streams.Replicas, jetstream.StoreLogger(s.log))
	if err != nil {
		return nil, err
	}
	stopAPI, err := s.disp.Sources().WatchEndpoints(context.WithoutCancel(ctx), store, func() config.Settings { return s.config().Defaults })
	if err != nil {
		return nil, err
	}
	s.stopWatch = stopAPI
	// Several processes share the fan-out: each must know every process's
	// config endpoints, or it would ack events only those endpoints want.
	// Each publishes its file's and applies the others'. The embedded
	// server's process shares too: another hookjet may connect to it with
	// nats.url.
	shared, err := jetstream.OpenEndpointStore(setupCtx, js, key, cfg.Streams.Replicas, jetstream.StoreLogger(s.log),
		jetstream.StoreBucket(jetstream.ConfigEndpointBucket, "hookjet config-file endpoints of every process, by id (secrets and header values sealed)"))
	if err != nil {
		return nil, err
	}
	stopShared, err := s.disp.Sources().ShareConfigEndpoints(context.WithoutCancel(ctx), shared)
	if err != nil {
		return nil, err
	}
	s.stopWatch = func() { stopShared(); stopAPI() }
	return store, nil
}

// listenAdmin binds admin.listen first, so that while start-up waits for
// NATS (a cluster electing leaders can take a while) /healthz answers and
// /readyz says what hookjet is waiting for; startAdmin then installs the
// real API.
func (s *Server) listenAdmin() error {
	ln, err := net.Listen("tcp", s.cfg.Admin.Listen)
	if err != nil {
		return fmt.Errorf("admin.listen: %w", err)
	}
	s.adminLn = ln
	s.handler = &startingHandler{token: s.cfg.Admin.Token.Reveal()}
	s.handler.waiting.Store(ptr("opening the state file"))
	var h http.Handler = s.handler
	if s.cfg.Admin.Token.IsZero() {
		// Open (loopback) mode: refuse what a web page could forge.
		h = admin.OpenGuard(s.cfg.Admin.Listen, h)
	}
	s.admin = &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	s.adminRun = goOwned(context.Background(), func(context.Context) {
		if err := s.admin.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("admin server", "err", err)
		}
	})
	return nil
}

// endpointDeliveries is the engine as endpoint management sees it
// (admin.Deliveries): its actions on an endpoint's deliveries, and the
// sources that put the API's changes in force before it answers.
type endpointDeliveries struct {
	*operate.Operator
	*sources.Sources
}

// startAdmin installs the admin API, with the console and portal in front
// of it, in place of the start-up answers.
func (s *Server) startAdmin(store *jetstream.EndpointStore, o Options) error {
	h := admin.NewHandler(s.withTally(s.withInbound(s.adminBackend())), s.registry, s.cfg.Admin.Token.Reveal(), s.log,
		admin.WithEndpointStore(store, endpointDeliveries{s.disp.Operator(), s.disp.Sources()}, s.config), admin.WithConfigPath(o.ConfigPath),
		admin.WithDurability(api.Durability(s.durability)), s.logOption(), s.eventsOption(), admin.WithDiscard(s.discardDeadLetters), s.publishOption(),
		admin.WithUnreachable(s.unreachable), admin.WithEventTypes(s.catalog))
	h, err := s.mountConsole(h)
	if err != nil {
		return err
	}
	s.handler.api.Store(&h)
	return nil
}

// startingHandler answers /healthz and, with 503 and the reason, /readyz
// and every other route until the admin API is installed. A protected route
// checks the token first, as the admin API does: without it the answer is
// 401, never what start-up waits for.
type startingHandler struct {
	api     atomic.Pointer[http.Handler]
	waiting atomic.Pointer[string]
	token   string // admin.token; empty: none
}

func (h *startingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if api := h.api.Load(); api != nil {
		(*api).ServeHTTP(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/healthz" {
		_, _ = io.WriteString(w, `{"status":"ok"}`+"\n")
		return
	}
	if r.URL.Path != "/readyz" && !admin.Authorized(h.token, r) {
		admin.Unauthorized(w)
		return
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	b, _ := json.Marshal(map[string]string{"error": "starting: " + *h.waiting.Load()})
	_, _ = w.Write(append(b, '\n'))
}

// starting records what start-up waits for, for /readyz.
func (s *Server) starting(what string) {
	if s.handler != nil {
		s.handler.waiting.Store(&what)
	}
}

func ptr[T any](v T) *T { return &v }

// payloadHeadroom is what hookjet adds to an event when it stores it as a
// task or a dead letter (its Hookjet-* headers).
const payloadHeadroom = 64 << 10

// checkPayloadHeadroom refuses a security.max_payload_bytes that the NATS
// server's max_payload cannot carry with hookjet's headers: such an event
// could be accepted but never parked or dead-lettered.
func checkPayloadHeadroom(cfg *config.Config, serverMax int64) error {
	if need := int64(cfg.Security.MaxPayloadBytes) + payloadHeadroom; serverMax > 0 && need > serverMax {
		return &config.FieldError{Key: "security.max_payload_bytes", Err: fmt.Errorf(
			"%d bytes plus %d of headroom for hookjet's task and dead-letter headers exceed the NATS server's max_payload (%d): lower it or raise max_payload",
			cfg.Security.MaxPayloadBytes, payloadHeadroom, serverMax)}
	}
	return nil
}

// AdminAddr is the address the admin API listens on.
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }

// Reload applies next's endpoints and defaults, the part of the config a
// SIGHUP reloads. Its other sections take effect at the next start: the
// running ones stay in force for everything (the admin API validates new
// endpoints against them too), and a warning names those that changed.
// Nothing changes when next's endpoints do not validate against them.
func (s *Server) Reload(ctx context.Context, next *config.Config) error {
	cur := s.config()
	merged := *cur
	merged.Endpoints, merged.Defaults, merged.Catalog = next.Endpoints, next.Defaults, next.Catalog
	if err := merged.Validate(); err != nil {
		return err
	}
	if changed := restartSections(cur, next); len(changed) > 0 {
		s.log.Warn("reload: these sections changed and take effect at the next start", "sections", changed)
	}
	if err := s.disp.Sources().Apply(ctx, &merged); err != nil {
		return err
	}
	if err := s.catalog.reload(ctx, merged.Catalog); err != nil {
		return err
	}
	merged.Endpoints = nil // the endpoint table holds them
	s.cfgMu.Lock()
	s.cfg = &merged
	s.cfgMu.Unlock()
	if !reflect.DeepEqual(cur.Defaults, merged.Defaults) {
		return s.reresolveAPIEndpoints(ctx, merged.Defaults)
	}
	return nil
}

// restartSections names the sections of next, other than endpoints and
// defaults, that differ from cur.
func restartSections(cur, next *config.Config) []string {
	var out []string
	a, b := reflect.ValueOf(*cur), reflect.ValueOf(*next)
	for i := range a.NumField() {
		f := a.Type().Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "endpoints" || name == "defaults" || name == "catalog" {
			continue
		}
		if !reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			out = append(out, name)
		}
	}
	return out
}

// reresolveAPIEndpoints applies new defaults to the endpoints of the admin
// API, which inherit them.
func (s *Server) reresolveAPIEndpoints(ctx context.Context, defaults config.Settings) error {
	if s.store == nil {
		return nil
	}
	var mu sync.Mutex
	var eps []config.Endpoint
	stop, err := s.store.Watch(ctx, func(id string, rec *jetstream.EndpointRecord) {
		if rec == nil {
			return
		}
		ep, err := s.store.Resolve(*rec, defaults)
		if err != nil {
			s.log.Error("API endpoint not applied", "endpoint", id, "err", err)
			return
		}
		mu.Lock()
		eps = append(eps, ep)
		mu.Unlock()
	})
	if err != nil {
		return fmt.Errorf("read the API endpoints for the new defaults: %w", err)
	}
	stop()
	mu.Lock()
	defer mu.Unlock()
	s.disp.Sources().PutEndpoints(eps)
	return nil
}

// config returns the configuration in force.
func (s *Server) config() *config.Config {
	s.cfgMu.Lock()
	defer s.cfgMu.Unlock()
	return s.cfg
}

// Shutdown stops the server in the order documented on Server. It is safe to
// call more than once.
func (s *Server) Shutdown() error {
	var err error
	s.once.Do(func() { err = s.shutdown() })
	return err
}

func (s *Server) shutdown() error {
	s.stopInbound() // providers' requests first: what is in flight is stored and answered
	s.stopPublish() // the same for applications' publish requests
	s.catalog.close()
	if s.stopWatch != nil {
		s.stopWatch()
		s.stopWatch = nil
	}
	s.disp.Stop(s.config().Worker.ShutdownGrace)
	s.stopped = true
	s.client.CloseIdleConnections()
	s.gauges.stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.admin.Shutdown(ctx); err != nil {
		s.log.Warn("admin shutdown", "err", err)
	}
	s.adminRun.stop()
	s.stopPortal(ctx)
	s.abort()
	s.log.Info("stopped")
	return nil
}

// abort stops whatever was started, in reverse order. It is what a failed
// Start runs, and the end of Shutdown.
func (s *Server) abort() {
	s.stopInbound()
	s.stopPublish()
	s.catalog.close()
	if s.stopWatch != nil {
		s.stopWatch()
	}
	if s.disp != nil && !s.stopped {
		s.disp.Stop(time.Second)
	}
	if s.brokers != nil {
		s.brokers.close() // the broker destinations' connections, once nothing sends
	}
	if s.stopOutbox != nil {
		s.stopOutbox() // finishes its batch while NATS is still connected
	}
	s.gauges.stop()
	s.closeTally()      // stores the last minutes' counts
	s.closeLog()        // stores the delivery log's last records
	s.closeEventIndex() // stops following HOOKJET_EVENTS
	if s.seen != nil {  // announces the last ids, stops following into the ledger
		s.seen.Close()
	}
	s.ledgerRun.stop() // flushes and acks what was delivered
	s.breakersRun.stop()
	s.opsRun.stop()           // stores the operational events left, the minute's dead-letter counts too
	if s.stopTracing != nil { // export the spans left
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := s.stopTracing(ctx); err != nil {
			s.log.Warn("tracing shutdown", "err", err)
		}
		cancel()
	}
	if s.admin != nil {
		_ = s.admin.Close() // after Shutdown: nothing left; after a failed start: stops serving
		s.adminRun.stop()
	}
	s.closePortal()
	s.closeConsole()
	s.node.CloseConn(2*time.Second, s.log)
	s.stateSync.stop() // syncs once more
	if s.db != nil {
		if err := s.db.Close(); err != nil {
			s.log.Warn("close state file", "err", err)
		}
	}
	s.node.Shutdown()
	s.clearRunning() // last: a stop cut short leaves the marker
}

// unreachable reports why no delivery could reach endpointURL: the guard
// the delivery client dials an endpoint with (the strict one for a
// tenant's) refuses its host, a literal address or localhost.
func (s *Server) unreachable(endpointURL string, tenant bool) error {
	u, err := url.Parse(endpointURL)
	if err != nil {
		return nil // the URL's validation says what is wrong with it
	}
	if tenant {
		return s.strictGuard.CheckHost(u.Hostname())
	}
	if err := s.guard.CheckHost(u.Hostname()); err != nil {
		return fmt.Errorf("%w (security.allow_private_networks or security.allow_cidrs would open it)", err)
	}
	return nil
}

// tenantGuard is the SSRF guard of endpoints with a tenant: the default one,
// which security.allow_private_networks and allow_cidrs do not open, unless
// portal.allow_private_networks opens it.
func tenantGuard(cfg *config.Config) *deliver.Guard {
	if cfg.Portal.AllowPrivateNetworks {
		return deliver.NewGuard(true, nil)
	}
	return deliver.NewGuard(false, nil).Because(config.TenantGuardReason)
}

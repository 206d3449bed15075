package dispatch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/deliver"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/state"
)

// The engine's own tests: a Dispatcher on an embedded nats-server (real
// streams, consumers, buckets and message schedules), a real state file
// for breakers and the ledger, and httptest receivers that verify every
// request's Standard Webhooks signature with the reference signer.

// rig is one hookjet engine, as the server wires it, on its own embedded
// server and data directory.
type rig struct {
	t        *testing.T
	cfg      *config.Config
	node     *jetstream.Node
	d        *Dispatcher
	breakers *breaker.Registry
	ledger   *dedupe.Ledger
	reg      *prometheus.Registry
	shared   *jetstream.EndpointStore // HOOKJET_CONFIG_ENDPOINTS when the engine shares its config endpoints

	mu   sync.Mutex
	dead []string // "endpoint event" as OnDeadLetter saw them
}

const testSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// fastSettings are endpoint settings for tests: short timeouts, quick
// retries, a breaker that opens after a few failures.
func fastSettings() config.Settings {
	s := config.Default().Defaults
	s.Timeout = 2 * time.Second
	s.Retry.Base = 50 * time.Millisecond
	s.Retry.Cap = 200 * time.Millisecond
	s.Retry.MaxAttempts = 3
	s.Retry.MaxAge = time.Hour
	s.Breaker.FailureThreshold = 50
	s.Breaker.Cooldown = time.Minute
	s.Breaker.MaxCooldown = time.Hour
	return s
}

// endpointTo is an endpoint delivering to rcv, matching events.
func endpointTo(id string, rcv *receiver, events ...string) config.Endpoint {
	if len(events) == 0 {
		events = []string{">"}
	}
	return config.Endpoint{
		ID: id, URL: rcv.srv.URL + "/" + id, Events: events,
		Secrets: []config.Secret{config.NewSecret(testSecret)}, Settings: fastSettings(),
	}
}

// newRig starts an engine delivering to eps (the config file's endpoints).
// edit, when not nil, changes the configuration first.
func newRig(t *testing.T, eps []config.Endpoint, edit func(*config.Config)) *rig {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.Security.AllowPrivateNetworks = true
	cfg.Defaults = fastSettings()
	cfg.Endpoints = eps
	if edit != nil {
		edit(&cfg)
	}
	node, err := jetstream.OpenNode(cfg.NATS, cfg.DataDir, "dispatch-test", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node.CloseConn(time.Second, slog.New(slog.DiscardHandler))
		node.Shutdown()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := jetstream.EnsureStreams(ctx, node.JetStream(), &cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	return startEngine(t, node, &cfg, false)
}

// sharing starts an engine on node as one of several hookjet processes
// sharing the streams and the fan-out, each with its own state file and
// config file (eps), sharing its config endpoints before it pulls.
func sharing(t *testing.T, node *jetstream.Node, base *config.Config, eps []config.Endpoint) *rig {
	t.Helper()
	cfg := *base
	cfg.DataDir = t.TempDir()
	cfg.Endpoints = eps
	return startEngine(t, node, &cfg, true)
}

// startEngine builds a Dispatcher on node as the server does (with share,
// sharing its config endpoints through HOOKJET_CONFIG_ENDPOINTS; with
// edits, changing its options first), runs it and stops it at the end of
// the test (before the node: cleanups run last first).
func startEngine(t *testing.T, node *jetstream.Node, cfg *config.Config, share bool, edits ...func(*Options)) *rig {
	t.Helper()
	r := &rig{t: t, cfg: cfg, node: node, reg: prometheus.NewRegistry()}
	log := slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	var owned sync.WaitGroup
	db, err := state.Open(filepath.Join(cfg.DataDir, "state.db"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if r.d != nil {
			r.d.Stop(2 * time.Second)
		}
		cancel()
		owned.Wait()
		testkit.CloseDB(t, db)
	})
	setup, done := context.WithTimeout(ctx, 30*time.Second)
	defer done()
	var disp *Dispatcher
	var dmu sync.Mutex
	r.breakers, err = breaker.NewRegistry(db, breaker.WithLogger(log), breaker.WithOnTransition(func(tr breaker.Transition) {
		dmu.Lock()
		d := disp
		dmu.Unlock()
		if d != nil {
			d.OnBreakerTransition(tr)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if r.ledger, err = dedupe.NewLedger(db, cfg.Dedupe.TTL, dedupe.WithBatch(100, time.Millisecond), dedupe.WithLogger(log)); err != nil {
		t.Fatal(err)
	}
	owned.Add(2)
	go func() { defer owned.Done(); r.ledger.Run(ctx) }()
	go func() { defer owned.Done(); r.breakers.Run(ctx) }()
	o := Options{
		NC: node.Conn(), FanoutNC: node.FanoutConn(), JS: node.JetStream(), Breakers: r.breakers, Ledger: r.ledger,
		Destinations: webhooks(deliver.NewClient(deliver.ClientOptions{Guard: deliver.NewGuard(true, nil), UserAgent: "dispatch-test"})),
		Metrics:      NewMetrics(r.reg), Log: log, Config: cfg, Catalog: rigCatalog(t, cfg),
		OnDeadLetter: func(endpoint, eventID string) {
			r.mu.Lock()
			r.dead = append(r.dead, endpoint+" "+eventID)
			r.mu.Unlock()
		},
	}
	for _, edit := range edits {
		edit(&o)
	}
	d, err := NewDispatcher(setup, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Start(setup); err != nil {
		t.Fatal(err)
	}
	dmu.Lock()
	disp = d
	dmu.Unlock()
	r.d = d
	if err := d.Operator().WatchResets(); err != nil {
		t.Fatal(err)
	}
	if share {
		store, err := jetstream.OpenEndpointStore(setup, node.JetStream(), bytes.Repeat([]byte{7}, 32), 1,
			jetstream.StoreBucket(jetstream.ConfigEndpointBucket, "config endpoints of every process"))
		if err != nil {
			t.Fatal(err)
		}
		stop, err := d.src.ShareConfigEndpoints(ctx, store)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop) // runs before the engine stops
		r.shared = store
	}
	if err := d.Run(setup); err != nil {
		t.Fatal(err)
	}
	return r
}

// publish stores an event of typ with id (and tenant, "" for none) in
// HOOKJET_EVENTS, as the publish API does.
func (r *rig) publish(typ, id, tenant string, body string) {
	r.t.Helper()
	msg := nats.NewMsg(jetstream.EventsPrefix + typ)
	msg.Header.Set(jetstream.HdrMsgID, id)
	if tenant != "" {
		msg.Header.Set(jetstream.HdrTenant, tenant)
	}
	msg.Data = []byte(body)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := r.node.JetStream().PublishMsg(ctx, msg); err != nil {
		r.t.Fatalf("publish %s: %v", id, err)
	}
}

// deadLetters returns the dead letters of endpoint as "event reason",
// sorted.
func (r *rig) deadLetters(endpoint string) []string {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dl, err := r.d.Queries().DeadLetters(ctx, api.DLQFilter{Endpoint: endpoint})
	if err != nil {
		r.t.Fatalf("dead letters: %v", err)
	}
	out := make([]string, 0, len(dl))
	for _, e := range dl {
		out = append(out, e.EventID+" "+e.Reason)
	}
	slices.Sort(out)
	return out
}

// status returns endpoint id's status as the admin API shows it.
func (r *rig) status(id string) api.EndpointStatus {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	st, err := r.d.Queries().Endpoint(ctx, id)
	if err != nil {
		r.t.Fatalf("endpoint %s: %v", id, err)
	}
	return st
}

// eventually polls cond until it holds or the bound passes.
func eventually(t *testing.T, what string, within time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// request is one 2xx request a receiver took.
type request struct {
	path, id, body string
}

// receiver is an HTTP endpoint that verifies every request's signature
// with the reference signer and answers what answer says (nil: 204).
type receiver struct {
	t   *testing.T
	srv *httptest.Server
	key []byte

	mu     sync.Mutex
	got    []request
	bad    []string // requests whose signature did not verify
	answer func(path, id string, n int) (status int, hdr http.Header)
	count  map[string]int // requests per path+id
}

func newReceiver(t *testing.T) *receiver {
	t.Helper()
	rc := &receiver{t: t, key: testkit.RefKey(t, testSecret), count: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	id := req.Header.Get(signature.HeaderID)
	ts := req.Header.Get(signature.HeaderTimestamp)
	want := testkit.RefMAC(rc.key, id, ts, body)
	ok := false
	for _, sig := range strings.Fields(req.Header.Get(signature.HeaderSignature)) {
		if strings.TrimPrefix(sig, "v1,") == want {
			ok = true
		}
	}
	rc.mu.Lock()
	path := strings.TrimPrefix(req.URL.Path, "/")
	rc.count[path+" "+id]++
	n := rc.count[path+" "+id]
	if !ok {
		rc.bad = append(rc.bad, path+" "+id)
	}
	answer := rc.answer
	rc.mu.Unlock()
	status, hdr := http.StatusNoContent, http.Header(nil)
	if answer != nil {
		status, hdr = answer(path, id, n)
	}
	for k, v := range hdr {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	if status >= 200 && status < 300 {
		rc.mu.Lock()
		rc.got = append(rc.got, request{path: path, id: id, body: string(body)})
		rc.mu.Unlock()
	}
}

// setAnswer changes how the receiver answers from now on.
func (rc *receiver) setAnswer(fn func(path, id string, n int) (int, http.Header)) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.answer = fn
}

// delivered returns the "path id" of every 2xx request, sorted.
func (rc *receiver) delivered() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := make([]string, 0, len(rc.got))
	for _, g := range rc.got {
		out = append(out, g.path+" "+g.id)
	}
	slices.Sort(out)
	return out
}

// requests is how many requests path got for event id, answered or not.
func (rc *receiver) requests(path, id string) int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.count[path+" "+id]
}

// bodyOf returns the body path received for event id.
func (rc *receiver) bodyOf(path, id string) string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, g := range rc.got {
		if g.path == path && g.id == id {
			return g.body
		}
	}
	return ""
}

// checkSigned fails the test when a request's signature did not verify.
func (rc *receiver) checkSigned() {
	rc.t.Helper()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.bad) > 0 {
		rc.t.Fatalf("requests with a signature that does not verify: %v", rc.bad)
	}
}

// waitDelivered waits until the receiver has exactly want (sorted "path
// id"), and fails when more arrive or they do not.
func (rc *receiver) waitDelivered(want []string, within time.Duration) {
	rc.t.Helper()
	slices.Sort(want)
	deadline := time.Now().Add(within)
	for {
		got := rc.delivered()
		if slices.Equal(got, want) {
			rc.checkSigned()
			return
		}
		if len(got) > len(want) || time.Now().After(deadline) {
			rc.t.Fatalf("delivered %v, want %v", got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// settled waits until HOOKJET_EVENTS' fan-out consumer has acked every
// event: nothing of the fan-out is left pending or unacked.
func (r *rig) settled(within time.Duration) {
	r.t.Helper()
	eventually(r.t, "the fan-out acks every event", within, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := r.node.JetStream().Consumer(ctx, jetstream.EventsStream, jetstream.FanoutConsumer)
		if err != nil {
			return false
		}
		info, err := c.Info(ctx)
		return err == nil && info.NumPending == 0 && info.NumAckPending == 0
	})
}

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// webhooks opens every endpoint's destination as the server does: a webhook
// through c.
func webhooks(c *deliver.Client) map[string]destination.Opener {
	return map[string]destination.Opener{
		destination.Webhook: func(ep destination.Endpoint) (destination.Destination, error) { return c.Open(ep), nil },
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/freeport"
	hjpublish "github.com/hookjet/hookjet/publish"
	hjserver "github.com/hookjet/hookjet/server"
)

// The one signing secret of every endpoint.
const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// endpointSpec is one endpoint of a scenario's config.
type endpointSpec struct {
	url   string // "": none (a broker destination, whose address is in extra)
	event string
	extra string // extra YAML lines, indented four spaces
}

// hookjetSpec is what a scenario varies in the config.
type hookjetSpec struct {
	endpoints   []endpointSpec
	maxInFlight int
	concurrency int
	// natsURL, when set, is an outside NATS cluster (R3 streams) instead of
	// the embedded server.
	natsURL string
	sync    string // nats.sync; empty: the default (always)
	logOff  bool   // log.enabled: false (the delivery log off; test/bench/deliverylog.go)
	top     string // more top-level YAML sections (such as streams)
}

// instance is one in-process hookjet with its own data directory and a
// publisher connection to its embedded NATS server.
type instance struct {
	dir     string
	srv     *hjserver.Server
	ns      *server.Server // the floor's own nats-server; nil for hookjet (hookjet's server owns its own)
	stopSub func()         // stops the floor's consumer; nil for hookjet
	nc      *nats.Conn
	js      natsjs.JetStream
	logs    *logCounter
	startup time.Duration // hjserver.Start
	parse   time.Duration // rendering and parsing the config, before startup
	// others are the further hookjet processes of a run with several on a
	// cluster (cluster3x3); stop stops them first.
	others []*instance

	pubAcked, pubFailed atomic.Int64
	lastAck             atomic.Int64 // unix ns of the latest PubAck
}

// configYAML renders the config of one run.
func configYAML(dir string, natsPort int, s hookjetSpec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir: %s\n", dir)
	if s.natsURL != "" {
		fmt.Fprintf(&b, "nats:\n  url: %q\nstreams:\n  replicas: 3\n", s.natsURL)
	} else {
		fmt.Fprintf(&b, "nats:\n  listen: 127.0.0.1:%d\n", natsPort)
		if s.sync != "" {
			fmt.Fprintf(&b, "  sync: %s\n", s.sync)
		}
	}
	b.WriteString("admin:\n  listen: 127.0.0.1:0\n")
	b.WriteString("log:\n  level: warn\n")
	if s.logOff {
		b.WriteString("  enabled: false\n")
	}
	b.WriteString("security:\n  allow_private_networks: true\n")
	if s.natsURL != "" {
		// Required with nats.url: it seals API endpoints' secrets for every process.
		b.WriteString("  secret_key: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n")
	}
	fmt.Fprintf(&b, "worker:\n  concurrency: %d\n  shutdown_grace: 2s\n", s.concurrency)
	fmt.Fprintf(&b, "defaults:\n  max_in_flight: %d\n", s.maxInFlight)
	b.WriteString(s.top)
	b.WriteString("endpoints:\n")
	for i, ep := range s.endpoints {
		fmt.Fprintf(&b, "  - id: e%d\n", i)
		if ep.url != "" { // a broker destination has its address in extra
			fmt.Fprintf(&b, "    url: %s\n", ep.url)
		}
		fmt.Fprintf(&b, "    secrets: [%s]\n    events: [%q]\n%s", secret, ep.event, ep.extra)
	}
	return b.String()
}

// benchLimits keep a run's stream reservations well under the defaults
// (35 GiB in all, sized for production): JetStream reserves every stream's
// max_bytes against the disk when it creates it, and a machine with less
// than about 50 GB free refused the later scenarios' streams. They still
// hold every scenario's events (events1m stores about 1 GiB).
var benchLimits = map[string]string{
	"HOOKJET_STREAMS_MAX_BYTES":       "4294967296",
	"HOOKJET_STREAMS_TASKS_MAX_BYTES": "2147483648",
	"HOOKJET_STREAMS_DLQ_MAX_BYTES":   "268435456",
	"HOOKJET_LOG_MAX_BYTES":           "2147483648",
}

// benchEnv is the environment a run's config is parsed with: benchLimits,
// less the stream limits of a run that sets its own (logfull).
func benchEnv(spec hookjetSpec) func(string) string {
	ownStreams := strings.Contains(spec.top, "streams:")
	return func(key string) string {
		if ownStreams && strings.HasPrefix(key, "HOOKJET_STREAMS_") {
			return ""
		}
		return benchLimits[key]
	}
}

// startHookjet starts hookjet for spec in a fresh temporary directory and
// connects a publisher to it.
func startHookjet(ctx context.Context, spec hookjetSpec, logOut io.Writer) (*instance, error) {
	dir, err := os.MkdirTemp("", "hookjet-bench-")
	if err != nil {
		return nil, err
	}
	h := &instance{dir: dir, logs: newLogCounter(logOut, slog.LevelWarn)}
	ok := false
	defer func() {
		if !ok {
			h.stop()
		}
	}()
	port, err := freeport.Port()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	cfg, err := config.Parse([]byte(configYAML(dir, port, spec)), benchEnv(spec))
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	h.parse = time.Since(start)
	start = time.Now()
	h.srv, err = hjserver.Start(ctx, cfg, hjserver.Options{Log: slog.New(h.logs)})
	if err != nil {
		return nil, fmt.Errorf("start hookjet: %w", err)
	}
	h.startup = time.Since(start)
	pubURL := fmt.Sprintf("nats://127.0.0.1:%d", port)
	if spec.natsURL != "" {
		pubURL = spec.natsURL
	}
	if err := h.connectPublisher(pubURL); err != nil {
		return nil, err
	}
	ok = true
	return h, nil
}

// connectPublisher connects the publisher to url (with opts, such as an
// in-process connection) and counts its PubAcks.
func (h *instance) connectPublisher(url string, opts ...nats.Option) error {
	var err error
	if h.nc, err = nats.Connect(url, append(opts, nats.Name("bench-publisher"))...); err != nil {
		return fmt.Errorf("connect publisher: %w", err)
	}
	h.js, err = natsjs.New(h.nc,
		natsjs.WithPublishAsyncMaxPending(4096),
		natsjs.WithPublishAsyncAckHandler(func(natsjs.JetStream, *nats.Msg, *natsjs.PubAck) {
			h.pubAcked.Add(1)
			h.lastAck.Store(time.Now().UnixNano())
		}),
		natsjs.WithPublishAsyncErrHandler(func(natsjs.JetStream, *nats.Msg, error) { h.pubFailed.Add(1) }),
	)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	return nil
}

// stop closes the publisher, shuts hookjet down and removes its directory.
// It returns how long the shutdown took.
func (h *instance) stop() time.Duration {
	start := time.Now()
	for _, o := range h.others {
		o.stop()
	}
	h.others = nil
	if h.nc != nil {
		h.nc.Close()
	}
	if h.stopSub != nil {
		h.stopSub()
	}
	if h.srv != nil {
		if err := h.srv.Shutdown(); err != nil {
			h.logs.note("shutdown: " + err.Error())
		}
	}
	if h.ns != nil {
		h.ns.Shutdown()
		h.ns.WaitForShutdown()
	}
	took := time.Since(start)
	if err := os.RemoveAll(h.dir); err != nil {
		h.logs.note("remove data dir: " + err.Error())
	}
	return took
}

// publisher publishes the events of a scenario: event n has type
// bench.e<n % endpoints>, id evt_<n>, and its publish time in the payload.
type publisher struct {
	js       natsjs.JetStream
	subjects []string
	route    func(n int) int // the endpoint of event n; nil: n % endpoints
	pad      int             // bytes added to each payload
	// keys are the ordering keys: event n carries keys[n % len(keys)] in
	// Hookjet-Ordering-Key; nil: no key (test/bench/ordered.go).
	keys []string
}

func newPublisher(js natsjs.JetStream, endpoints int) *publisher {
	p := &publisher{js: js, subjects: make([]string, endpoints)}
	for i := range p.subjects {
		p.subjects[i] = "hookjet.events." + eventType(i)
	}
	return p
}

// publish sends event n asynchronously; when too many acks are outstanding it
// waits for them.
func (p *publisher) publish(n int) error {
	ep := n % len(p.subjects)
	if p.route != nil {
		ep = p.route(n)
	}
	m := &nats.Msg{
		Subject: p.subjects[ep],
		Header:  nats.Header{"Nats-Msg-Id": []string{eventID(n)}},
	}
	if p.keys != nil {
		m.Header[hjpublish.HeaderKey] = []string{p.keys[n%len(p.keys)]}
	}
	for {
		m.Data = appendPayload(make([]byte, 0, payloadSize+p.pad), n, time.Now(), ep)
		if p.pad > 0 {
			m.Data = padPayload(m.Data, p.pad)
		}
		_, err := p.js.PublishMsgAsync(m, natsjs.WithStallWait(5*time.Second))
		if !errors.Is(err, natsjs.ErrTooManyStalledMsgs) {
			return err
		}
	}
}

// publishAll publishes events 0 to events-1 in order, at once or, with
// rate > 0, paced at rate events/s from t0, and sends the first error, or
// nil, on the returned channel; it stops when ctx ends.
func (p *publisher) publishAll(ctx context.Context, events int, rate float64, t0 time.Time) <-chan error {
	done := make(chan error, 1)
	if rate > 0 {
		go func() { done <- pace(ctx, p, events, rate, t0) }()
		return done
	}
	go func() {
		for n := range events {
			if ctx.Err() != nil {
				done <- ctx.Err()
				return
			}
			if err := p.publish(n); err != nil {
				done <- fmt.Errorf("publish event %d: %w", n, err)
				return
			}
		}
		done <- nil
	}()
	return done
}

// flush waits until every asynchronous publish has been acknowledged.
func (p *publisher) flush(ctx context.Context) error {
	select {
	case <-p.js.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %d publish acks: %w", p.js.PublishAsyncPending(), ctx.Err())
	}
}

// logCounter is the slog handler hookjet logs to during a run: it counts
// records at or above level, keeps the first few distinct messages for the
// report and writes everything to w (io.Discard unless -log is given).
type logCounter struct {
	slog.Handler
	shared *logShared
}

type logShared struct {
	mu     sync.Mutex
	counts map[slog.Level]int
	first  []string
	seen   map[string]bool
}

const keepLogMessages = 8

func newLogCounter(w io.Writer, level slog.Level) *logCounter {
	return &logCounter{
		Handler: slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}),
		shared:  &logShared{counts: map[slog.Level]int{}, seen: map[string]bool{}},
	}
}

func (l *logCounter) Handle(ctx context.Context, r slog.Record) error {
	l.note2(r.Level, r.Message)
	return l.Handler.Handle(ctx, r)
}

func (l *logCounter) WithAttrs(as []slog.Attr) slog.Handler {
	return &logCounter{Handler: l.Handler.WithAttrs(as), shared: l.shared}
}

func (l *logCounter) WithGroup(name string) slog.Handler {
	return &logCounter{Handler: l.Handler.WithGroup(name), shared: l.shared}
}

func (l *logCounter) note(msg string) { l.note2(slog.LevelError, "bench: "+msg) }

func (l *logCounter) note2(level slog.Level, msg string) {
	s := l.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counts[level]++
	key := level.String() + " " + msg
	if !s.seen[key] && len(s.first) < keepLogMessages {
		s.seen[key] = true
		s.first = append(s.first, key)
	}
}

// summary returns the number of warnings and errors and the first distinct
// messages.
func (l *logCounter) summary() (warn, errs int, first []string) {
	s := l.shared
	s.mu.Lock()
	defer s.mu.Unlock()
	for lv, n := range s.counts {
		switch {
		case lv >= slog.LevelError:
			errs += n
		case lv >= slog.LevelWarn:
			warn += n
		}
	}
	return warn, errs, append([]string(nil), s.first...)
}

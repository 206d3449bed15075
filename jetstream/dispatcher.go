package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/deliver"
)

// Options are the parts a Dispatcher is built from. Every field is required
// except Log, Now and OnDeadLetter.
type Options struct {
	NC           *nats.Conn
	JS           natsjs.JetStream
	Client       *deliver.Client
	Breakers     *breaker.Registry
	Ledger       *dedupe.Ledger
	Metrics      *Metrics
	Log          *slog.Logger
	Config       *config.Config
	Now          func() time.Time               // nil: time.Now
	OnDeadLetter func(endpoint, eventID string) // test seam called after the DLQ copy is stored and before the original is removed; nil: nothing
}

// Dispatcher runs one delivery loop per configured endpoint. Each endpoint
// reads its own durable consumer, so a dead or slow endpoint holds only its
// own ack slots and in-flight cap, never another endpoint's.
//
// Shutdown, as Stop documents: stop pulling, hand back buffered messages,
// wait for in-flight deliveries for the grace period, then cancel the rest.
type Dispatcher struct {
	o        Options
	log      *slog.Logger
	now      func() time.Time
	attempts natsjs.KeyValue
	states   natsjs.KeyValue
	shared   *sharedSeen // nil with the embedded server: one process, the local ledger suffices
	global   chan struct{}
	// maxPayload is security.max_payload_bytes; SIGHUP reloads endpoints only.
	maxPayload int

	loopCtx    context.Context // cancelled by Stop: loops stop pulling
	stopLoops  context.CancelFunc
	sendCtx    context.Context // cancelled when the grace period is over
	stopSends  context.CancelFunc
	loops      sync.WaitGroup
	inflight   sync.WaitGroup
	inFlightN  atomic.Int64
	background sync.WaitGroup

	applyMu  sync.Mutex // serialises Apply
	mu       sync.Mutex // guards cfg, workers and disabled; never held while waiting
	cfg      *config.Config
	workers  map[string]*worker
	disabled map[string]string // endpoint -> reason

	hour hourStats
}

type worker struct {
	ep      config.Endpoint
	signer  *deliver.Signer
	header  http.Header
	cons    natsjs.Consumer
	sem     chan struct{}
	limiter *rate.Limiter
	pull    int

	// Series of the success path, looked up once.
	okAttempts, okFirst prometheus.Counter
	duration            prometheus.Observer

	holdMu    sync.Mutex
	holdUntil time.Time
	holdCause string

	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
}

// NewDispatcher prepares a dispatcher; Start begins delivering.
func NewDispatcher(ctx context.Context, o Options) (*Dispatcher, error) {
	d := &Dispatcher{
		o:        o,
		log:      o.Log,
		now:      o.Now,
		cfg:      o.Config,
		workers:  map[string]*worker{},
		disabled: map[string]string{},
		global:   make(chan struct{}, o.Config.Worker.Concurrency),

		maxPayload: o.Config.Security.MaxPayloadBytes,
	}
	if d.log == nil {
		d.log = slog.New(slog.DiscardHandler)
	}
	if d.now == nil {
		d.now = time.Now
	}
	var err error
	if d.attempts, err = o.JS.KeyValue(ctx, AttemptsBucket); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", AttemptsBucket, err)
	}
	if d.states, err = o.JS.KeyValue(ctx, EndpointBucket); err != nil {
		return nil, fmt.Errorf("bucket %s: %w", EndpointBucket, err)
	}
	if o.Config.NATS.URL != "" {
		kv, err := o.JS.KeyValue(ctx, SeenBucket)
		if err != nil {
			return nil, fmt.Errorf("bucket %s: %w", SeenBucket, err)
		}
		d.shared = newSharedSeen(kv)
	}
	d.loopCtx, d.stopLoops = context.WithCancel(context.WithoutCancel(ctx))
	d.sendCtx, d.stopSends = context.WithCancel(context.WithoutCancel(ctx))
	return d, nil
}

// Start loads the disabled endpoints, watches them, and starts a loop for each
// configured endpoint.
func (d *Dispatcher) Start(ctx context.Context) error {
	w, err := d.states.WatchAll(d.loopCtx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", EndpointBucket, err)
	}
	// The initial values arrive before the nil marker.
	for e := range w.Updates() {
		if e == nil {
			break
		}
		d.applyState(e)
	}
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-d.loopCtx.Done():
				return
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil {
					d.applyState(e)
				}
			}
		}
	}()
	if err := d.runSafetyNet(ctx); err != nil {
		return err
	}
	if err := d.Apply(ctx, d.o.Config); err != nil {
		return err
	}
	replays, err := EnsureReplayConsumer(ctx, d.o.JS, d.o.Config)
	if err != nil {
		return err
	}
	d.loops.Add(1)
	go func() {
		defer d.loops.Done()
		d.runReplays(d.loopCtx, replays)
	}()
	return nil
}

// Apply makes the running loops match cfg's endpoints: new endpoints start,
// changed ones restart with their new settings, removed ones stop and their
// consumers are deleted. In-flight deliveries of restarted loops finish.
func (d *Dispatcher) Apply(ctx context.Context, cfg *config.Config) error {
	d.applyMu.Lock()
	defer d.applyMu.Unlock()
	d.mu.Lock()
	current := make(map[string]*worker, len(d.workers))
	for id, w := range d.workers {
		current[id] = w
	}
	d.mu.Unlock()

	keep := make(map[string]bool, len(cfg.Endpoints))
	var errs []error
	for _, ep := range cfg.Endpoints {
		keep[ep.ID] = true
		old, ok := current[ep.ID]
		if ok && sameEndpoint(old.ep, ep) {
			continue
		}
		w, err := d.newWorker(ctx, ep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			old.cancel()
			<-old.done
		}
		d.o.Breakers.Configure(ep.ID, breakerSettings(ep))
		d.mu.Lock()
		d.workers[ep.ID] = w
		d.mu.Unlock()
		d.startLoop(w)
	}
	for id, w := range current {
		if keep[id] {
			continue
		}
		w.cancel()
		<-w.done
		d.mu.Lock()
		delete(d.workers, id)
		d.mu.Unlock()
		d.o.Breakers.Remove(id)
		d.o.Metrics.forget(id)
	}
	if removed, err := RemoveStaleConsumers(ctx, d.o.JS, keep); err != nil {
		errs = append(errs, err)
	} else if len(removed) > 0 {
		d.log.Info("removed consumers of endpoints no longer configured", "consumers", removed)
	}
	d.mu.Lock()
	d.cfg = cfg
	d.mu.Unlock()
	return errors.Join(errs...)
}

func sameEndpoint(a, b config.Endpoint) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) || len(a.Secrets) != len(b.Secrets) || len(a.Headers) != len(b.Headers) {
		return false
	}
	for i := range a.Secrets {
		if a.Secrets[i].Reveal() != b.Secrets[i].Reveal() {
			return false
		}
	}
	for k, v := range a.Headers {
		if b.Headers[k].Reveal() != v.Reveal() {
			return false
		}
	}
	return true
}

func breakerSettings(ep config.Endpoint) breaker.Settings {
	return breaker.Settings{
		FailureThreshold: ep.Breaker.FailureThreshold,
		Cooldown:         ep.Breaker.Cooldown,
		MaxCooldown:      ep.Breaker.MaxCooldown,
		SlowP95:          ep.Breaker.SlowP95,
	}
}

func (d *Dispatcher) newWorker(ctx context.Context, ep config.Endpoint) (*worker, error) {
	keys := make([][]byte, 0, len(ep.Secrets))
	for _, s := range ep.Secrets {
		k, err := config.DecodeSecret(s.Reveal())
		if err != nil {
			return nil, fmt.Errorf("endpoints %s: secret: %w", ep.ID, err)
		}
		keys = append(keys, k)
	}
	hdr := make(http.Header, len(ep.Headers))
	for k, v := range ep.Headers {
		hdr.Set(k, v.Reveal())
	}
	cons, err := EnsureConsumer(ctx, d.o.JS, ep)
	if err != nil {
		return nil, err
	}
	if ep.InsecureSkipVerify {
		d.log.Warn("TLS certificate verification is OFF for this endpoint (insecure_skip_verify): anyone on the path can read and forge its deliveries", "endpoint", ep.ID)
	}
	w := &worker{
		ep:     ep,
		signer: deliver.NewSigner(keys...),
		header: hdr,
		cons:   cons,
		sem:    make(chan struct{}, ep.MaxInFlight),
		pull:   ep.MaxInFlight,
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	m := d.o.Metrics
	w.okAttempts = m.Attempts.WithLabelValues(ep.ID, deliver.Success.String())
	w.okFirst = m.FirstAttempts.WithLabelValues(ep.ID, deliver.Success.String())
	w.duration = m.AttemptDuration.WithLabelValues(ep.ID)
	if ep.RateLimit.RPS > 0 {
		w.limiter = rate.NewLimiter(rate.Limit(ep.RateLimit.RPS), max(1, ep.RateLimit.Burst))
		// Buffered messages age against AckWait while they wait for tokens:
		// keep no more than about ten seconds' worth in the client buffer.
		w.pull = min(ep.MaxInFlight, max(1, int(ep.RateLimit.RPS*10)))
	}
	return w, nil
}

func (d *Dispatcher) startLoop(w *worker) {
	ctx, cancel := context.WithCancel(d.loopCtx)
	w.cancel = cancel
	d.loops.Add(1)
	go func() {
		defer d.loops.Done()
		defer close(w.done)
		d.run(ctx, w)
	}()
}

// Stop stops every loop from pulling, hands back buffered messages, and waits
// up to grace for in-flight deliveries to finish; after that their requests
// are cancelled and the messages are returned to JetStream without counting
// an attempt. Acks of finished deliveries may still be queued in the ledger:
// the caller stops the ledger after Stop returns.
func (d *Dispatcher) Stop(grace time.Duration) {
	d.stopLoops()
	d.loops.Wait()
	done := make(chan struct{})
	go func() { d.inflight.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		d.log.Warn("grace period over; cancelling in-flight deliveries", "in_flight", d.inFlightN.Load())
		d.stopSends()
		<-done
	}
	d.stopSends()
	d.background.Wait()
}

func (w *worker) hold() time.Time {
	until, _ := w.holdInfo()
	return until
}

// holdInfo returns until when the endpoint is held and why (breaker,
// rate_limit).
func (w *worker) holdInfo() (time.Time, string) {
	w.holdMu.Lock()
	defer w.holdMu.Unlock()
	return w.holdUntil, w.holdCause
}

// slowDown holds the whole endpoint until t. Long holds also pause the
// endpoint's consumer on the server, so no hookjet process receives its
// messages meanwhile and buffered ones cost no ack slots of other endpoints.
func (d *Dispatcher) slowDown(w *worker, until time.Time, cause string) {
	w.holdMu.Lock()
	extend := until.After(w.holdUntil)
	if extend {
		w.holdUntil, w.holdCause = until, cause
	}
	w.holdMu.Unlock()
	if !extend || until.Sub(d.now()) < 2*time.Second {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := d.o.JS.PauseConsumer(ctx, EventsStream, ConsumerName(w.ep.ID), until); err != nil {
		d.log.Warn("pause consumer", "endpoint", w.ep.ID, "cause", cause, "err", err)
	}
}

func (d *Dispatcher) isDisabled(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.disabled[id]
	return ok
}

var errHold = errors.New("endpoint on hold")

// run is one endpoint's loop: (re)open the message iterator, pump, and wait
// out holds and disabled periods without holding any message.
func (d *Dispatcher) run(ctx context.Context, w *worker) {
	id := w.ep.ID
	for ctx.Err() == nil {
		if d.isDisabled(id) {
			select {
			case <-ctx.Done():
			case <-w.wake:
			}
			continue
		}
		if wait := w.hold().Sub(d.now()); wait > 0 {
			sleep(ctx, wait, w.wake)
			continue
		}
		it, err := w.cons.Messages(natsjs.PullMaxMessages(w.pull))
		if err != nil {
			d.log.Warn("open consumer", "endpoint", id, "err", err)
			sleep(ctx, time.Second, w.wake)
			if c, err := EnsureConsumer(ctx, d.o.JS, w.ep); err == nil {
				w.cons = c
			}
			continue
		}
		err = d.pump(ctx, w, it)
		d.returnBuffered(w, it)
		if err != nil && !errors.Is(err, errHold) && ctx.Err() == nil {
			d.log.Warn("consume", "endpoint", id, "err", err)
			sleep(ctx, time.Second, w.wake)
		}
	}
}

// sleep waits for dur, until ctx is done, or until wake fires (a nil wake
// never does): an endpoint loop idles this way without holding a message.
func sleep(ctx context.Context, dur time.Duration, wake <-chan struct{}) {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-wake:
	}
}

// returnBuffered stops the iterator and naks what it had buffered, so those
// messages go straight back to JetStream instead of waiting out AckWait.
// Draining is asynchronous: messages the server sent before it saw the
// unsubscribe keep arriving until the iterator reports it is closed.
func (d *Dispatcher) returnBuffered(w *worker, it natsjs.MessagesContext) {
	it.Drain()
	deadline := time.Now().Add(5 * time.Second)
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return
		}
		msg, err := it.Next(natsjs.NextMaxWait(wait))
		if err != nil {
			return
		}
		delay := time.Duration(0)
		if wait := w.hold().Sub(d.now()); wait > 0 {
			delay = wait + jitter(time.Second)
		}
		if err := msg.NakWithDelay(delay); err != nil {
			d.log.Debug("nak buffered", "endpoint", w.ep.ID, "err", err)
		}
	}
}

func jitter(upTo time.Duration) time.Duration {
	if upTo <= 0 {
		return 0
	}
	return rand.N(upTo)
}

// pump takes messages while the endpoint may receive them. It returns errHold
// when the endpoint must wait (breaker open, rate limited by the receiver,
// disabled) and the iterator's error when it closes.
func (d *Dispatcher) pump(ctx context.Context, w *worker, it natsjs.MessagesContext) error {
	id := w.ep.ID
	m := d.o.Metrics
	for {
		select {
		case w.sem <- struct{}{}:
		default:
			m.Deferrals.WithLabelValues(id, "in_flight").Inc()
			select {
			case w.sem <- struct{}{}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		release := func() { <-w.sem }
		if d.isDisabled(id) || w.hold().After(d.now()) {
			release()
			return errHold
		}
		if w.limiter != nil {
			if err := w.limiter.Wait(ctx); err != nil {
				release()
				return err
			}
		}
		ok, wait := d.o.Breakers.Acquire(id)
		if !ok {
			release()
			m.Deferrals.WithLabelValues(id, "breaker").Inc()
			if wait >= 2*time.Second {
				d.slowDown(w, d.now().Add(wait), "breaker")
				return errHold
			}
			sleep(ctx, wait, w.wake)
			continue
		}
		msg, err := it.Next(natsjs.NextContext(ctx))
		if err != nil {
			d.o.Breakers.Release(id)
			release()
			return err
		}
		if d.isDisabled(id) {
			// Disabled while we waited for this message: put it back. No
			// delay: nobody pulls for a disabled endpoint, and once it is
			// enabled the message should go at once.
			d.o.Breakers.Release(id)
			release()
			m.Deferrals.WithLabelValues(id, "disabled").Inc()
			if err := msg.Nak(); err != nil {
				d.log.Debug("nak", "endpoint", id, "err", err)
			}
			return errHold
		}
		select {
		case d.global <- struct{}{}:
		case <-ctx.Done():
			d.o.Breakers.Release(id)
			release()
			if err := msg.Nak(); err != nil {
				d.log.Debug("nak", "endpoint", id, "err", err)
			}
			return ctx.Err()
		}
		d.dispatch(w, msg, release)
	}
}

// dispatch hands an admitted message to a worker goroutine. The caller holds
// a slot of the endpoint's in-flight cap (release gives it back) and of the
// global concurrency.
func (d *Dispatcher) dispatch(w *worker, msg natsjs.Msg, release func()) {
	m := d.o.Metrics
	d.inflight.Add(1)
	m.InFlight.Set(float64(d.inFlightN.Add(1)))
	go func() {
		defer d.inflight.Done()
		settled := d.handle(w, msg, release)
		<-d.global
		m.InFlight.Set(float64(d.inFlightN.Add(-1)))
		if !settled {
			release()
		}
	}()
}

// runReplays delivers replayed dead letters (HOOKJET_REPLAY). Each goes to
// its endpoint through the same admission as the endpoint's own loop; one
// that cannot go now is put back with a delay, so an endpoint that is
// waiting never holds up replays for the others.
func (d *Dispatcher) runReplays(ctx context.Context, cons natsjs.Consumer) {
	for ctx.Err() == nil {
		it, err := cons.Messages(natsjs.PullMaxMessages(64))
		if err != nil {
			d.log.Warn("open replay consumer", "err", err)
			sleep(ctx, time.Second, nil)
			continue
		}
		for {
			msg, err := it.Next(natsjs.NextContext(ctx))
			if err != nil {
				if ctx.Err() == nil {
					d.log.Warn("consume replays", "err", err)
				}
				break
			}
			d.admitReplay(ctx, msg)
		}
		it.Stop()
	}
}

func (d *Dispatcher) admitReplay(ctx context.Context, msg natsjs.Msg) {
	id := strings.TrimPrefix(msg.Subject(), ReplayPrefix)
	d.mu.Lock()
	w := d.workers[id]
	_, disabled := d.disabled[id]
	d.mu.Unlock()
	putBack := func(delay time.Duration, cause string) {
		if cause != "" {
			d.o.Metrics.Deferrals.WithLabelValues(id, cause).Inc()
		}
		if err := msg.NakWithDelay(delay); err != nil {
			d.log.Debug("nak replay", "endpoint", id, "err", err)
		}
	}
	switch {
	case w == nil:
		d.log.Warn("replay for an endpoint that is not configured; kept until it is", "endpoint", id)
		putBack(time.Minute, "")
		return
	case disabled:
		putBack(30*time.Second, "disabled")
		return
	}
	if until, cause := w.holdInfo(); until.After(d.now()) {
		putBack(until.Sub(d.now())+jitter(time.Second), cause)
		return
	}
	select {
	case w.sem <- struct{}{}:
	default:
		putBack(time.Second+jitter(time.Second), "in_flight")
		return
	}
	release := func() { <-w.sem }
	if w.limiter != nil {
		r := w.limiter.Reserve()
		if wait := r.Delay(); wait > 0 {
			r.Cancel()
			release()
			putBack(wait+jitter(100*time.Millisecond), "rate_limit")
			return
		}
	}
	if ok, wait := d.o.Breakers.Acquire(id); !ok {
		release()
		putBack(max(wait, time.Second)+jitter(time.Second), "breaker")
		return
	}
	select {
	case d.global <- struct{}{}:
	case <-ctx.Done():
		d.o.Breakers.Release(id)
		release()
		putBack(0, "")
		return
	}
	d.dispatch(w, msg, release)
}

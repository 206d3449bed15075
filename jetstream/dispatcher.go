package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strconv"
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
// except Log and Now.
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
	return d.Apply(ctx, d.o.Config)
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
	w.holdMu.Lock()
	defer w.holdMu.Unlock()
	return w.holdUntil
}

// slowDown holds the whole endpoint until t. Long holds also pause the
// endpoint's consumer on the server, so no hookjet process receives its
// messages meanwhile and buffered ones cost no ack slots of other endpoints.
func (d *Dispatcher) slowDown(w *worker, until time.Time, cause string) {
	w.holdMu.Lock()
	extend := until.After(w.holdUntil)
	if extend {
		w.holdUntil = until
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
			d.sleep(ctx, w, wait)
			continue
		}
		it, err := w.cons.Messages(natsjs.PullMaxMessages(w.pull))
		if err != nil {
			d.log.Warn("open consumer", "endpoint", id, "err", err)
			d.sleep(ctx, w, time.Second)
			if c, err := EnsureConsumer(ctx, d.o.JS, w.ep); err == nil {
				w.cons = c
			}
			continue
		}
		err = d.pump(ctx, w, it)
		d.returnBuffered(w, it)
		if err != nil && !errors.Is(err, errHold) && ctx.Err() == nil {
			d.log.Warn("consume", "endpoint", id, "err", err)
			d.sleep(ctx, w, time.Second)
		}
	}
}

func (d *Dispatcher) sleep(ctx context.Context, w *worker, dur time.Duration) {
	t := time.NewTimer(dur)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-w.wake:
	}
}

// returnBuffered stops the iterator and naks what it had buffered, so those
// messages go straight back to JetStream instead of waiting out AckWait.
func (d *Dispatcher) returnBuffered(w *worker, it natsjs.MessagesContext) {
	it.Drain()
	for {
		msg, err := it.Next(natsjs.NextMaxWait(200 * time.Millisecond))
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
			d.sleep(ctx, w, wait)
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
}

// msgLog logs about one message, adding its endpoint and event only when a
// record is actually written: the success path logs nothing and allocates
// nothing for logging.
type msgLog struct {
	l        *slog.Logger
	endpoint string
	ev       *event
}

func (m msgLog) log(level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !m.l.Enabled(ctx, level) {
		return
	}
	attrs := append([]any{"endpoint", m.endpoint, "event_id", m.ev.id, "event_type", m.ev.typ, "seq", m.ev.seq}, args...)
	m.l.Log(ctx, level, msg, attrs...)
}

func (m msgLog) Debug(msg string, args ...any) { m.log(slog.LevelDebug, msg, args...) }
func (m msgLog) Info(msg string, args ...any)  { m.log(slog.LevelInfo, msg, args...) }
func (m msgLog) Warn(msg string, args ...any)  { m.log(slog.LevelWarn, msg, args...) }

// event is what hookjet reads off a stream message.
type event struct {
	id, typ string
	seq     uint64
	replay  bool
	at      time.Time
}

func (d *Dispatcher) eventOf(msg natsjs.Msg, meta *natsjs.MsgMetadata) event {
	h := msg.Headers()
	ev := event{seq: meta.Sequence.Stream, at: meta.Timestamp}
	subj := msg.Subject()
	if len(subj) > len(ReplayPrefix) && subj[:len(ReplayPrefix)] == ReplayPrefix {
		ev.replay = true
		ev.id = h.Get(HdrEventID)
		ev.typ = h.Get(HdrEventType)
	} else {
		ev.typ = subj[min(len(EventsPrefix), len(subj)):]
		ev.id = h.Get(HdrMsgID)
	}
	if ev.id == "" {
		ev.id = "seq_" + strconv.FormatUint(ev.seq, 10)
		if !ev.replay && meta.NumDelivered == 1 {
			d.o.Metrics.MissingID.Inc()
		}
	}
	return ev
}

// handle delivers one message to one endpoint and settles it: ack after a 2xx
// (once the ledger holds it), a delayed nak for a retry, or a dead letter.
//
// After a 2xx the endpoint's in-flight slot stays taken until the ledger has
// committed the delivery and the ack is sent: handle then returns true and
// calls release itself. So what a crash can resend is bounded by
// max_in_flight per endpoint, answered-but-unacked deliveries included.
func (d *Dispatcher) handle(w *worker, msg natsjs.Msg, release func()) (releases bool) {
	id := w.ep.ID
	m := d.o.Metrics
	meta, err := msg.Metadata()
	if err != nil {
		d.o.Breakers.Release(id)
		d.log.Error("message without metadata", "endpoint", id, "err", err)
		return false
	}
	ev := d.eventOf(msg, meta)
	log := msgLog{l: d.log, endpoint: id, ev: &ev}

	if !ev.replay {
		_, dup, err := d.o.Ledger.FirstSeen(ev.id, ev.seq)
		if err != nil {
			log.Warn("ledger lookup", "err", err)
		} else if !dup && d.shared != nil {
			// Another process may have accepted this id: ask the shared record.
			// If it cannot answer, deliver: a possible duplicate beats a stall.
			if dup, err = d.shared.duplicate(d.sendCtx, ev.id, ev.seq); err != nil {
				log.Warn("shared dedupe lookup failed; delivering", "err", err)
			}
		}
		if dup {
			d.o.Breakers.Release(id)
			m.Duplicates.WithLabelValues("ledger").Inc()
			log.Debug("duplicate event id; not delivered again")
			d.ack(log, msg)
			return false
		}
	}
	// Checked on every delivery, not only redeliveries: a server that lost
	// consumer state in a crash redelivers with a count of 1.
	if done, err := d.o.Ledger.Delivered(id, ev.id); err == nil && done {
		d.o.Breakers.Release(id)
		m.Duplicates.WithLabelValues("delivered").Inc()
		d.ack(log, msg)
		return false
	}
	var st attemptState
	if meta.NumDelivered > 1 {
		st, err = d.loadAttempts(d.sendCtx, id, ev.seq)
		if err != nil {
			d.o.Breakers.Release(id)
			d.infraDefer(log, w, msg, err)
			return false
		}
		if st.DeadLettered != "" {
			d.o.Breakers.Release(id)
			d.term(log, msg, st.DeadLettered)
			return false
		}
	}
	if max := d.maxPayload; max > 0 && len(msg.Data()) > max {
		d.o.Breakers.Release(id)
		st.Error = fmt.Sprintf("payload of %d bytes exceeds security.max_payload_bytes (%d)", len(msg.Data()), max)
		d.deadLetter(log, w, msg, ev, st, "rejected")
		return false
	}
	if age := d.now().Sub(ev.at); age > w.ep.Retry.MaxAge {
		d.o.Breakers.Release(id)
		if st.Error == "" {
			st.Error = fmt.Sprintf("not delivered within retry.max_age (%s)", w.ep.Retry.MaxAge)
		}
		d.deadLetter(log, w, msg, ev, st, "expired")
		return false
	}

	h := msg.Headers()
	req := deliver.Request{
		URL:                w.ep.URL,
		ID:                 ev.id,
		Body:               msg.Data(),
		ContentType:        h.Get(HdrContentType),
		Header:             w.header,
		Signer:             w.signer,
		Timeout:            w.ep.Timeout,
		InsecureSkipVerify: w.ep.InsecureSkipVerify,
	}
	res := d.o.Client.Do(d.sendCtx, &req)
	if d.sendCtx.Err() != nil {
		// Shutdown cancelled the request: not the endpoint's fault.
		d.o.Breakers.Release(id)
		if err := msg.Nak(); err != nil {
			log.Debug("nak", "err", err)
		}
		return false
	}
	st.Attempts++
	if st.First.IsZero() {
		st.First = res.Sent
	}
	st.Last = res.Sent
	st.Status = res.Status
	first := st.Attempts == 1
	switch res.Class {
	case deliver.Success:
		w.okAttempts.Inc()
		if first {
			w.okFirst.Inc()
		}
	default:
		m.Attempts.WithLabelValues(id, res.Class.String()).Inc()
		if first {
			m.FirstAttempts.WithLabelValues(id, res.Class.String()).Inc()
		}
	}
	if res.Class != deliver.Rejected {
		w.duration.Observe(res.Latency.Seconds())
	}

	switch res.Class {
	case deliver.Success:
		d.o.Breakers.Record(id, breaker.Success, res.Latency, first)
		d.hour.add(d.now(), true)
		retried := st.Attempts > 1
		d.o.Ledger.MarkDelivered(id, ev.id, func(err error) {
			if err != nil {
				log.Warn("ledger write failed; acking anyway", "err", err)
			}
			d.ack(log, msg)
			release()
			if retried {
				d.forgetAttempts(id, ev.seq)
			}
		})
		return true
	case deliver.Transient:
		d.o.Breakers.Record(id, breaker.Failure, res.Latency, first)
	case deliver.Rejected:
		d.o.Breakers.Release(id)
	default:
		d.o.Breakers.Record(id, breaker.Neutral, res.Latency, first)
	}
	d.hour.add(d.now(), false)
	st.Error = res.Reason()

	switch res.Class {
	case deliver.Transient:
		d.retry(log, w, msg, ev, st, deliver.Backoff(w.ep.Retry.Base, w.ep.Retry.Cap, st.Attempts-1, nil))
	case deliver.RateLimited:
		wait := deliver.RateLimitWait(res.RetryAfter, w.ep.Retry.Cap, nil)
		d.slowDown(w, d.now().Add(wait), "rate_limit")
		m.Deferrals.WithLabelValues(id, "rate_limit").Inc()
		d.retry(log, w, msg, ev, st, wait)
	case deliver.Gone:
		d.deadLetter(log, w, msg, ev, st, "gone")
		d.disable(id, "gone: the endpoint answered 410")
	case deliver.Rejected:
		d.deadLetter(log, w, msg, ev, st, "rejected")
	default:
		d.deadLetter(log, w, msg, ev, st, "permanent")
	}
	return false
}

func (d *Dispatcher) retry(log msgLog, w *worker, msg natsjs.Msg, ev event, st attemptState, delay time.Duration) {
	if st.Attempts >= w.ep.Retry.MaxAttempts {
		d.deadLetter(log, w, msg, ev, st, "exhausted")
		return
	}
	if d.now().Add(delay).Sub(ev.at) > w.ep.Retry.MaxAge {
		d.deadLetter(log, w, msg, ev, st, "expired")
		return
	}
	if err := d.saveAttempts(d.sendCtx, w.ep.ID, ev.seq, st); err != nil {
		log.Warn("attempt state not saved; the attempt count may restart", "err", err)
	}
	if err := msg.NakWithDelay(delay); err != nil {
		log.Warn("nak with delay", "err", err)
	}
	log.Info("delivery failed; retrying", "attempt", st.Attempts, "status", st.Status, "error", st.Error, "retry_in", delay.Round(time.Millisecond))
}

// infraDefer returns a message after a failure of hookjet's own (NATS, state):
// it is not charged to the message's attempts.
func (d *Dispatcher) infraDefer(log msgLog, w *worker, msg natsjs.Msg, cause error) {
	d.o.Metrics.Deferrals.WithLabelValues(w.ep.ID, "infrastructure").Inc()
	log.Warn("deferred after an internal error", "err", cause)
	if err := msg.NakWithDelay(2*time.Second + jitter(3*time.Second)); err != nil {
		log.Warn("nak with delay", "err", err)
	}
}

func (d *Dispatcher) ack(log msgLog, msg natsjs.Msg) {
	if err := msg.Ack(); err != nil {
		log.Warn("ack", "err", err)
	}
}

func (d *Dispatcher) term(log msgLog, msg natsjs.Msg, reason string) {
	if err := msg.TermWithReason(reason); err != nil {
		log.Warn("term", "err", err)
	}
}

// deadLetter copies the message to HOOKJET_DLQ and waits for the PubAck before
// removing the original. The copy's Nats-Msg-Id is derived from the endpoint
// and stream sequence, and the attempt state remembers the dead letter, so a
// crash between the two steps neither loses nor duplicates it.
func (d *Dispatcher) deadLetter(log msgLog, w *worker, msg natsjs.Msg, ev event, st attemptState, reason string) {
	id := w.ep.ID
	out := deadLetterMsg(id, ev, st, reason, msg.Data(), msg.Headers().Get(HdrContentType))
	ctx, cancel := context.WithTimeout(d.sendCtx, 5*time.Second)
	defer cancel()
	if _, err := d.o.JS.PublishMsg(ctx, out); err != nil {
		d.infraDefer(log, w, msg, fmt.Errorf("dead-letter copy: %w", err))
		return
	}
	if d.o.OnDeadLetter != nil {
		d.o.OnDeadLetter(id, ev.id)
	}
	st.DeadLettered = reason
	if st.Attempts > 0 || reason != "rejected" {
		if err := d.saveAttempts(d.sendCtx, id, ev.seq, st); err != nil {
			log.Warn("attempt state not saved", "err", err)
		}
	}
	d.term(log, msg, reason)
	d.o.Metrics.DeadLetters.WithLabelValues(id, reason).Inc()
	log.Warn("dead-lettered", "reason", reason, "attempts", st.Attempts, "status", st.Status, "error", st.Error)
	d.ops("dead_letter", map[string]any{"endpoint": id, "event_id": ev.id, "event_type": ev.typ, "reason": reason, "attempts": st.Attempts})
}

// deadLetterMsg builds the DLQ copy of a message. Its Nats-Msg-Id depends
// only on the endpoint and the stream sequence, so storing it twice is
// deduplicated by HOOKJET_DLQ.
func deadLetterMsg(endpoint string, ev event, st attemptState, reason string, data []byte, contentType string) *nats.Msg {
	out := nats.NewMsg(DLQPrefix + endpoint)
	out.Data = data
	h := out.Header
	h.Set(HdrMsgID, "dlq-"+endpoint+"-"+strconv.FormatUint(ev.seq, 10))
	h.Set(HdrEventID, ev.id)
	h.Set(HdrEventType, ev.typ)
	h.Set(HdrEndpoint, endpoint)
	h.Set(HdrReason, reason)
	h.Set(HdrAttempts, strconv.Itoa(st.Attempts))
	h.Set(HdrLastStatus, "")
	if st.Status != 0 {
		h.Set(HdrLastStatus, strconv.Itoa(st.Status))
	}
	h.Set(HdrLastError, st.Error)
	h.Set(HdrFirstTry, rfc3339(st.First))
	h.Set(HdrLastTry, rfc3339(st.Last))
	if contentType != "" {
		h.Set(HdrContentType, contentType)
	}
	return out
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// ops publishes an operational event on hookjet.ops.<kind>; HOOKJET_OPS keeps it.
func (d *Dispatcher) ops(kind string, body map[string]any) {
	body["at"] = d.now().UTC().Format(time.RFC3339Nano)
	b, err := json.Marshal(body)
	if err != nil {
		return
	}
	if err := d.o.NC.Publish(OpsPrefix+kind, b); err != nil {
		d.log.Warn("publish operational event", "kind", kind, "err", err)
	}
}

// OnBreakerTransition logs, counts and publishes a breaker transition. Pass it
// to breaker.WithOnTransition.
func (d *Dispatcher) OnBreakerTransition(t breaker.Transition) {
	d.o.Metrics.BreakerState.WithLabelValues(t.Endpoint).Set(float64(t.To))
	kind := map[breaker.State]string{breaker.Open: "endpoint.opened", breaker.Closed: "endpoint.closed", breaker.HalfOpen: "endpoint.half_opened"}[t.To]
	d.log.Warn("breaker "+t.To.String(), "endpoint", t.Endpoint, "from", t.From.String(), "cooldown", t.Cooldown)
	d.ops(kind, map[string]any{"endpoint": t.Endpoint, "from": t.From.String(), "to": t.To.String(), "cooldown_seconds": t.Cooldown.Seconds()})
}

type disabledState struct {
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
}

func (d *Dispatcher) applyState(e natsjs.KeyValueEntry) {
	id := e.Key()
	d.mu.Lock()
	if e.Operation() == natsjs.KeyValuePut {
		var s disabledState
		_ = json.Unmarshal(e.Value(), &s)
		d.disabled[id] = s.Reason
	} else {
		delete(d.disabled, id)
	}
	w := d.workers[id]
	d.mu.Unlock()
	if w != nil {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (d *Dispatcher) disable(id, reason string) {
	if err := d.SetDisabled(context.Background(), id, true, reason); err != nil {
		d.log.Error("disable endpoint", "endpoint", id, "err", err)
	}
}

// SetDisabled disables or re-enables an endpoint for every hookjet process. A
// disabled endpoint keeps its messages in JetStream until it is enabled.
func (d *Dispatcher) SetDisabled(ctx context.Context, id string, disabled bool, reason string) error {
	d.mu.Lock()
	_, known := d.workers[id]
	d.mu.Unlock()
	if !known {
		return fmt.Errorf("%w: %q", ErrUnknownEndpoint, id)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if disabled {
		b, err := json.Marshal(disabledState{Reason: reason, At: d.now().UTC()})
		if err != nil {
			return err
		}
		if _, err := d.states.Put(ctx, id, b); err != nil {
			return fmt.Errorf("disable %s: %w", id, err)
		}
		d.log.Warn("endpoint disabled", "endpoint", id, "reason", reason)
		d.ops("endpoint.disabled", map[string]any{"endpoint": id, "reason": reason})
		return nil
	}
	if err := d.states.Delete(ctx, id); err != nil && !errors.Is(err, natsjs.ErrKeyNotFound) {
		return fmt.Errorf("enable %s: %w", id, err)
	}
	d.log.Info("endpoint enabled", "endpoint", id)
	d.ops("endpoint.enabled", map[string]any{"endpoint": id})
	return nil
}

// hourStats counts outcomes per minute over the last hour.
type hourStats struct {
	mu      sync.Mutex
	minute  [60]int64
	ok, bad [60]int64
}

func (h *hourStats) add(now time.Time, ok bool) {
	min := now.Unix() / 60
	i := min % 60
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.minute[i] != min {
		h.minute[i], h.ok[i], h.bad[i] = min, 0, 0
	}
	if ok {
		h.ok[i]++
	} else {
		h.bad[i]++
	}
}

func (h *hourStats) sum(now time.Time) (ok, bad int64) {
	min := now.Unix() / 60
	h.mu.Lock()
	defer h.mu.Unlock()
	for i := range h.minute {
		if min-h.minute[i] < 60 {
			ok += h.ok[i]
			bad += h.bad[i]
		}
	}
	return ok, bad
}

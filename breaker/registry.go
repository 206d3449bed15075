package breaker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

const (
	// ProbeRetry is the wait Acquire suggests while a half-open breaker's
	// probe is out.
	ProbeRetry = time.Second

	// flushInterval is how often Run writes dirty endpoints.
	flushInterval = time.Second
)

// Option configures a Registry.
type Option func(*Registry)

// WithClock sets the clock the registry reads; the default is time.Now.
func WithClock(now func() time.Time) Option {
	return func(r *Registry) { r.now = now }
}

// WithLogger sets the logger for transitions and persistence problems; the
// default discards.
func WithLogger(l *slog.Logger) Option {
	return func(r *Registry) { r.log = l }
}

// WithOnTransition sets a function called for every state transition, after
// the transition has been written to the file. It runs with no registry lock
// held, on the goroutine of one of the calls that caused a pending
// transition, one call at a time and in the order in which each endpoint's
// transitions happened. It may call any Registry method.
func WithOnTransition(fn func(Transition)) Option {
	return func(r *Registry) { r.onTransition = fn }
}

// Registry holds the breakers and statistics of the configured endpoints.
// Its methods are safe for concurrent use.
//
// A configured endpoint costs its id and a pointer to its settings until it
// has something to keep: its breaker is made on its first result (or at
// Configure when a persisted record is waiting for it), so 100,000 idle
// endpoints cost no breaker each. Until then it reads as a closed breaker
// with no samples.
type Registry struct {
	db           *bolt.DB
	now          func() time.Time
	log          *slog.Logger
	onTransition func(Transition)

	// active holds the breakers made so far (id -> *endpoint), each stored
	// once and read without a lock; an entry leaves it only by Remove.
	active sync.Map

	mu         sync.Mutex
	configured map[string]*Settings // every configured id; settings with defaults, shared when they are the defaults
	loaded     map[string]record    // persisted state of endpoints not configured yet
	removed    map[string]struct{}  // ids whose records the next Flush deletes

	flushMu sync.Mutex // serialises Flush so that writes land in snapshot order

	// inState counts configured breakers per state but Closed (whose
	// count is the rest of the configured ones), so States costs nothing
	// with 100,000 endpoints.
	inState [numStates]atomic.Int64

	dirtyMu sync.Mutex  // guards dirty
	dirty   []*endpoint // endpoints changed since the last Flush, each once

	notifyMu sync.Mutex   // guards the fields below
	queue    []Transition // transitions waiting to be flushed and reported
	draining bool         // a goroutine is flushing and reporting the queue
}

// endpoint is one endpoint's breaker and statistics, guarded by mu.
type endpoint struct {
	id string

	mu                       sync.Mutex
	settings                 Settings
	state                    State
	consecutive              int
	cooldown                 time.Duration
	openedAt, openUntil      time.Time
	probeOut                 bool
	lastSuccess, lastFailure time.Time
	win                      window
	dirty                    bool // queued in Registry.dirty
	removed                  bool // no longer counted in Registry.inState
}

// NewRegistry returns a registry persisting to db, loading every endpoint
// record in the bucket "breaker" (created when missing). A loaded record
// takes effect when Configure is called for its id; records that cannot be
// decoded are logged and ignored. The caller keeps db open until the
// registry's last Flush.
func NewRegistry(db *bolt.DB, opts ...Option) (*Registry, error) {
	r := &Registry{
		db:         db,
		now:        time.Now,
		log:        slog.New(slog.DiscardHandler),
		configured: make(map[string]*Settings),
		loaded:     make(map[string]record),
		removed:    make(map[string]struct{}),
	}
	for _, opt := range opts {
		opt(r)
	}

	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketName)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			rec, err := decodeRecord(v)
			if err != nil {
				r.log.Warn("ignoring persisted breaker state", "endpoint", string(k), "err", err)
				return nil
			}
			r.loaded[string(k)] = rec
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("load breaker state: %w", err)
	}
	return r, nil
}

// Config names the settings of one endpoint's breaker, for ConfigureAll.
type Config struct {
	ID       string
	Settings Settings
}

// Configure creates or updates the breaker of endpoint id. A new endpoint
// starts from its persisted state when there is one. Calls for ids that were
// never configured (or were removed) are ignored by the other methods.
func (r *Registry) Configure(id string, s Settings) {
	r.ConfigureAll([]Config{{ID: id, Settings: s}})
}

// ConfigureAll is Configure for many endpoints at once, under one lock.
func (r *Registry) ConfigureAll(cs []Config) {
	if len(cs) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()

	for _, c := range cs {
		s := shared(c.Settings.withDefaults())
		r.configured[c.ID] = s
		if e := r.lookup(c.ID); e != nil {
			e.mu.Lock()
			e.settings = *s
			if e.state == Closed {
				e.cooldown = s.Cooldown
			}
			e.mu.Unlock()
			continue
		}
		// A persisted record takes effect now, so that an open breaker
		// is open from the start; the others wait for a first result.
		if _, ok := r.loaded[c.ID]; ok {
			r.activateLocked(c.ID, s)
		}
	}
}

// defaultSettings is the settings every endpoint without settings of its
// own shares in Registry.configured.
var defaultSettings = Settings{}.withDefaults()

// shared returns s, as the one shared defaultSettings when it is them.
func shared(s Settings) *Settings {
	if s == defaultSettings {
		return &defaultSettings
	}
	return &s
}

// activate returns the breaker of configured endpoint id, made on first
// use, or nil when id is not configured.
func (r *Registry) activate(id string) *endpoint {
	if e := r.lookup(id); e != nil {
		return e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.configured[id]
	if !ok {
		return nil
	}
	if e := r.lookup(id); e != nil {
		return e
	}
	return r.activateLocked(id, s)
}

// activateLocked makes the breaker of configured endpoint id, which has
// none. A new breaker is clean: closed with no samples, or exactly its
// persisted record. An id removed since the last Flush keeps its place in
// r.removed, so that Flush deletes the old record first. The caller holds
// r.mu.
func (r *Registry) activateLocked(id string, s *Settings) *endpoint {
	e := &endpoint{id: id, settings: *s, cooldown: s.Cooldown}
	if rec, ok := r.loaded[id]; ok {
		e.restore(rec, r.now())
		delete(r.loaded, id)
	}
	if e.state != Closed {
		r.inState[e.state].Add(1)
	}
	r.active.Store(id, e)
	return e
}

// Remove forgets endpoint id; the next Flush deletes its persisted state.
func (r *Registry) Remove(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()

	delete(r.loaded, id)
	delete(r.configured, id)
	r.removed[id] = struct{}{}
	v, ok := r.active.LoadAndDelete(id)
	if !ok {
		return
	}
	e := v.(*endpoint)
	e.mu.Lock()
	e.removed = true
	if e.state != Closed {
		r.inState[e.state].Add(-1)
	}
	e.mu.Unlock()
}

// lookup returns id's breaker if it has been made.
func (r *Registry) lookup(id string) *endpoint {
	if v, ok := r.active.Load(id); ok {
		return v.(*endpoint)
	}
	return nil
}

// Acquire asks to send one request to endpoint id. When ok is false the
// request must not be sent and wait is how long until asking again makes
// sense: the rest of the cooldown of an open breaker, or ProbeRetry while a
// half-open breaker's probe is out. When the cooldown has passed, the
// breaker becomes half-open and exactly one Acquire returns ok (the probe)
// until Record or Release is called for it. Every Acquire that returns ok
// must be followed by one Record or Release. Unknown ids are always allowed.
func (r *Registry) Acquire(id string) (ok bool, wait time.Duration) {
	ok, _, wait = r.AcquireProbe(id)
	return ok, wait
}

// AcquireProbe is Acquire that also says whether the permission is the
// half-open breaker's probe: give it back with ReleaseProbe, so that giving
// back an ordinary permission never frees the probe slot of a breaker that
// has since become half-open.
func (r *Registry) AcquireProbe(id string) (ok, probe bool, wait time.Duration) {
	e := r.lookup(id)
	if e == nil {
		return true, false, 0
	}
	e.mu.Lock()
	switch e.state {
	case Closed:
		e.mu.Unlock()
		return true, false, 0
	case HalfOpen:
		if e.probeOut {
			e.mu.Unlock()
			return false, false, ProbeRetry
		}
		e.probeOut = true
		e.mu.Unlock()
		return true, true, 0
	}
	now := r.now() // only here: reading the clock costs more than the rest
	if now.Before(e.openUntil) {
		wait = e.openUntil.Sub(now)
		e.mu.Unlock()
		return false, false, wait
	}
	e.probeOut = true
	r.transition(e, HalfOpen, now)
	e.mu.Unlock()
	r.notify()
	return true, true, 0
}

// ReleaseProbe gives back a permission of AcquireProbe that produced no
// result: only a probe frees the half-open breaker's probe slot.
func (r *Registry) ReleaseProbe(id string, probe bool) {
	if probe {
		r.Release(id)
	}
}

// Record reports the result of a request that Acquire allowed to endpoint
// id. latency (from sending the request to knowing its result) and
// firstAttempt feed the statistics. Record does no I/O unless the breaker
// changes state. Results reported while the breaker is open, or while it is
// half-open before its probe is out, come from requests sent before it
// opened: they update the statistics but not the state. Acquire hands out
// no token, so such a late result arriving while the probe is out would
// count as the probe's; that needs a request to outlive the cooldown, which
// the defaults (15s timeout, 5m cooldown) rule out. Unknown ids and unknown
// results are ignored.
func (r *Registry) Record(id string, res Result, latency time.Duration, firstAttempt bool) {
	if res != Success && res != Failure && res != Neutral {
		return
	}
	e := r.activate(id)
	if e == nil {
		return
	}
	now := r.now()
	e.mu.Lock()
	e.win.add(hourOf(now), bucketOf(latency), firstAttempt, res == Success)
	r.touch(e)
	switch res {
	case Success:
		e.lastSuccess = now
		e.consecutive = 0
	case Neutral:
		e.consecutive = 0
	case Failure:
		e.lastFailure = now
		e.consecutive++
	}

	changed := false
	switch e.state {
	case Closed:
		if res == Failure && e.shouldOpen() {
			e.cooldown = e.settings.Cooldown
			r.transition(e, Open, now)
			changed = true
		}
	case HalfOpen:
		if e.probeOut && res == Neutral {
			// A rate-limited probe (429) says nothing about health: the
			// breaker stays half-open and the next request probes again.
			e.probeOut = false
		} else if e.probeOut {
			e.probeOut = false
			if res == Failure {
				e.cooldown = doubled(e.cooldown, e.settings.MaxCooldown)
				r.transition(e, Open, now)
			} else {
				e.cooldown = e.settings.Cooldown
				r.transition(e, Closed, now)
			}
			changed = true
		}
	case Open:
	}
	e.mu.Unlock()
	if changed {
		r.notify()
	}
}

// Release gives back an Acquire of endpoint id that produced no result (for
// example on shutdown), freeing a half-open breaker's probe slot.
func (r *Registry) Release(id string) {
	e := r.lookup(id)
	if e == nil {
		return
	}
	e.mu.Lock()
	if e.state == HalfOpen {
		e.probeOut = false
	}
	e.mu.Unlock()
}

// Health returns a snapshot of endpoint id, and false when id is not
// configured.
func (r *Registry) Health(id string) (Health, bool) {
	e := r.lookup(id)
	if e == nil {
		r.mu.Lock()
		s, ok := r.configured[id]
		r.mu.Unlock()
		if !ok {
			return Health{}, false
		}
		return Health{State: Closed, Cooldown: s.Cooldown}, true
	}
	now := r.now()
	e.mu.Lock()
	defer e.mu.Unlock()
	e.win.advance(hourOf(now))
	h := Health{
		State:               e.state,
		ConsecutiveFailures: e.consecutive,
		Cooldown:            e.cooldown,
		OpenedAt:            e.openedAt,
		OpenUntil:           e.openUntil,
		P50:                 e.win.quantile(0.50),
		P95:                 e.win.quantile(0.95),
		P99:                 e.win.quantile(0.99),
		Samples:             int64(e.win.count),
		FirstAttempts:       int64(e.win.firstAttempts),
		LastSuccess:         e.lastSuccess,
		LastFailure:         e.lastFailure,
	}
	if e.win.firstAttempts > 0 {
		h.FirstAttemptSuccessRate = float64(e.win.firstSuccesses) / float64(e.win.firstAttempts)
	}
	return h, true
}

// shouldOpen reports whether the current run of failures opens a closed
// breaker. The caller holds e.mu.
func (e *endpoint) shouldOpen() bool {
	threshold := e.settings.FailureThreshold
	if e.consecutive >= threshold {
		return true
	}
	if e.consecutive < max(threshold/2, 1) || e.settings.SlowP95 < 0 || e.win.count < minSlowSamples {
		return false
	}
	return e.win.quantile(0.95) > e.settings.SlowP95
}

// doubled returns twice d, capped at limit.
func doubled(d, limit time.Duration) time.Duration {
	if d > limit/2 {
		return limit
	}
	return 2 * d
}

// transition moves e to state to and queues the transition for notify.
// The caller holds e.mu, which keeps each endpoint's transitions in order in
// the queue, and calls notify after releasing it.
func (r *Registry) transition(e *endpoint, to State, now time.Time) {
	tr := Transition{Endpoint: e.id, From: e.state, To: to, Cooldown: e.cooldown, At: now}
	if !e.removed {
		if e.state != Closed {
			r.inState[e.state].Add(-1)
		}
		if to != Closed {
			r.inState[to].Add(1)
		}
	}
	e.state = to
	r.touch(e)
	switch to {
	case Open:
		e.openedAt = now
		e.openUntil = now.Add(e.cooldown)
	case Closed:
		e.openedAt, e.openUntil = time.Time{}, time.Time{}
	case HalfOpen:
	}
	r.notifyMu.Lock()
	r.queue = append(r.queue, tr)
	r.notifyMu.Unlock()
}

// notify flushes and reports queued transitions. Only one goroutine drains
// at a time; the others return at once and leave their transitions to it,
// so reports stay in order and a callback may itself cause transitions.
func (r *Registry) notify() {
	r.notifyMu.Lock()
	if r.draining {
		r.notifyMu.Unlock()
		return
	}
	r.draining = true
	for len(r.queue) > 0 {
		batch := r.queue
		r.queue = nil
		r.notifyMu.Unlock()

		if err := r.Flush(); err != nil {
			r.log.Error("persisting breaker transition", "err", err)
		}
		for _, tr := range batch {
			r.logTransition(tr)
			if r.onTransition != nil {
				r.onTransition(tr)
			}
		}

		r.notifyMu.Lock()
	}
	r.draining = false
	r.notifyMu.Unlock()
}

func (r *Registry) logTransition(tr Transition) {
	level := slog.LevelInfo
	if tr.To == Open {
		level = slog.LevelWarn
	}
	r.log.Log(context.Background(), level, "breaker "+tr.To.String(),
		"endpoint", tr.Endpoint, "from", tr.From.String(), "cooldown", tr.Cooldown)
}

// Flush writes every endpoint changed since the last Flush, and deletes the
// records of removed endpoints, in one bbolt transaction. On error the
// changes stay pending for the next Flush.
func (r *Registry) Flush() error {
	r.flushMu.Lock()
	defer r.flushMu.Unlock()

	r.mu.Lock()
	var removed map[string]struct{} // taken, never shared: Remove writes r.removed
	if len(r.removed) > 0 {
		removed, r.removed = r.removed, make(map[string]struct{})
	}
	r.mu.Unlock()

	type put struct {
		e   *endpoint
		val []byte
	}
	var (
		puts []put
		errs []error
	)
	r.dirtyMu.Lock()
	queued := r.dirty
	r.dirty = nil
	r.dirtyMu.Unlock()
	slices.SortFunc(queued, func(a, b *endpoint) int { return strings.Compare(a.id, b.id) })
	for _, e := range queued {
		e.mu.Lock()
		if !e.dirty || r.lookup(e.id) != e {
			e.dirty = false // removed: its record is deleted, not written
			e.mu.Unlock()
			continue
		}
		rec := e.snapshot()
		e.dirty = false
		e.mu.Unlock()

		val, err := json.Marshal(rec)
		if err != nil {
			errs = append(errs, fmt.Errorf("encode breaker state of %s: %w", e.id, err))
			r.markDirty(e)
			continue
		}
		puts = append(puts, put{e: e, val: val})
	}
	if len(puts) == 0 && len(removed) == 0 {
		return errors.Join(errs...)
	}

	err := r.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketName)
		if err != nil {
			return err
		}
		for id := range removed {
			if err := b.Delete([]byte(id)); err != nil {
				return err
			}
		}
		for _, p := range puts {
			if err := b.Put([]byte(p.e.id), p.val); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		for _, p := range puts {
			r.markDirty(p.e)
		}
		r.mu.Lock()
		for id := range removed {
			r.removed[id] = struct{}{}
		}
		r.mu.Unlock()
		errs = append(errs, fmt.Errorf("write breaker state: %w", err))
	}
	return errors.Join(errs...)
}

func (r *Registry) markDirty(e *endpoint) {
	e.mu.Lock()
	r.touch(e)
	e.mu.Unlock()
}

// touch queues e for the next Flush. The caller holds e.mu. Flush visits
// only queued endpoints, so 100,000 idle breakers cost it nothing.
func (r *Registry) touch(e *endpoint) {
	if e.dirty {
		return
	}
	e.dirty = true
	r.dirtyMu.Lock()
	r.dirty = append(r.dirty, e)
	r.dirtyMu.Unlock()
}

// Run flushes every second until ctx is done, then flushes a last time and
// returns. Errors are logged and retried at the next flush. The caller owns
// the goroutine running Run and must keep the bbolt file open until Run has
// returned.
func (r *Registry) Run(ctx context.Context) {
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := r.Flush(); err != nil {
				r.log.Error("final breaker flush", "err", err)
			}
			return
		case <-t.C:
			if err := r.Flush(); err != nil {
				r.log.Error("breaker flush", "err", err)
			}
		}
	}
}

// States counts the configured breakers in each state (an endpoint without
// a breaker yet is closed). It reads two counters and the number of
// configured endpoints: free to call often with 100,000 endpoints.
func (r *Registry) States() (closed, halfOpen, open int) {
	r.mu.Lock()
	n := len(r.configured)
	r.mu.Unlock()
	halfOpen, open = int(r.inState[HalfOpen].Load()), int(r.inState[Open].Load())
	return n - halfOpen - open, halfOpen, open
}

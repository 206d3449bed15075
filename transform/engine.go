package transform

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/dlclark/regexp2"
)

// Defaults of Limits.
const (
	// DefaultTimeout is transform_timeout's default.
	DefaultTimeout = 50 * time.Millisecond
	// DefaultMaxMemory is transform_max_memory's default.
	DefaultMaxMemory = 64 << 20
	// DefaultMaxOutputBytes is security.max_payload_bytes' default.
	DefaultMaxOutputBytes = 1 << 20
)

// RegexpTimeout stops a regular expression that needs backtracking (goja
// hands those to dlclark/regexp2; the rest run on Go's linear regexp): the
// match fails after it. It is set once, process-wide, by the first New.
const RegexpTimeout = 50 * time.Millisecond

// Limits bound one run. The zero value means the defaults.
type Limits struct {
	// Timeout interrupts a run (transform_timeout). Zero means
	// DefaultTimeout.
	Timeout time.Duration
	// MaxMemory interrupts a run once the heap grew by more than it since
	// the run began (transform_max_memory). Zero means DefaultMaxMemory.
	MaxMemory int64
	// MaxOutputBytes bounds the payload a run returns
	// (security.max_payload_bytes). Zero means DefaultMaxOutputBytes.
	MaxOutputBytes int
}

func (l Limits) withDefaults() Limits {
	if l.Timeout <= 0 {
		l.Timeout = DefaultTimeout
	}
	if l.MaxMemory <= 0 {
		l.MaxMemory = DefaultMaxMemory
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = DefaultMaxOutputBytes
	}
	return l
}

// Input is the delivery a transform reshapes.
type Input struct {
	// Type, ID, Tenant and Key are the event's type, id, tenant and
	// ordering key ("" when absent).
	Type, ID, Tenant, Key string
	// Payload is the event's payload and ContentType the publisher's
	// Content-Type.
	Payload     []byte
	ContentType string
	// URL is the endpoint's URL; "" for a destination without one (the
	// script may then not set url).
	URL string
}

// Output is what the engine sends instead.
type Output struct {
	// Cancel says the script cancelled the delivery; nothing else is set.
	Cancel bool
	// Payload is the body; ContentType is "application/json" for a JSON
	// value, the publisher's for a string.
	Payload     []byte
	ContentType string
	// URL is where to send it (Input.URL unless the script changed it).
	URL string
	// Headers are the headers the script set (checked with CheckHeader);
	// they override the endpoint's configured ones. Nil means none.
	Headers map[string]string
}

// Options size an Engine. The zero value is usable.
type Options struct {
	// Concurrency is how many runs go at once; the others wait. Zero means
	// GOMAXPROCS.
	Concurrency int
	// MaxIdle is how many idle runtimes an endpoint keeps. Zero means 2.
	MaxIdle int
}

// Engine runs transforms: a bounded pool of runs over runtimes pooled per
// endpoint and script version, and the watchdog that interrupts them. Close
// stops the watchdog; it is safe for concurrent use.
type Engine struct {
	slots   chan struct{}
	maxIdle int
	w       *watchdog

	mu    sync.Mutex
	pools map[string]*pool
}

// pool holds one endpoint's idle runtimes of one script version.
type pool struct {
	version string
	idle    []*vm
}

var regexpOnce sync.Once

// New returns an Engine; Close it.
func New(opts Options) *Engine {
	regexpOnce.Do(func() { regexp2.DefaultMatchTimeout = RegexpTimeout })
	if opts.Concurrency <= 0 {
		opts.Concurrency = runtime.GOMAXPROCS(0)
	}
	if opts.MaxIdle <= 0 {
		opts.MaxIdle = 2
	}
	return &Engine{
		slots:   make(chan struct{}, opts.Concurrency),
		maxIdle: opts.MaxIdle,
		w:       newWatchdog(),
		pools:   make(map[string]*pool),
	}
}

// Close stops the watchdog and drops the idle runtimes. No Run may be under
// way or follow.
func (e *Engine) Close() {
	e.w.stop()
	e.mu.Lock()
	e.pools = make(map[string]*pool)
	e.mu.Unlock()
}

// Forget drops an endpoint's idle runtimes (it was removed, or its
// transform was).
func (e *Engine) Forget(endpoint string) {
	e.mu.Lock()
	delete(e.pools, endpoint)
	e.mu.Unlock()
}

// Idle returns how many idle runtimes the endpoint holds, for tests.
func (e *Engine) Idle(endpoint string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p := e.pools[endpoint]; p != nil {
		return len(p.idle)
	}
	return 0
}

// Run runs s for endpoint over in, waiting for a free slot (or ctx). A
// failed run returns an *Error (KindThrown, KindTimeout, KindMemory or
// KindBadReturn) with the script's message and line:column; ctx's end
// interrupts a run like its timeout. The runtime of a failed run is dropped.
func (e *Engine) Run(ctx context.Context, endpoint string, s *Script, in Input, lim Limits) (Output, error) {
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return Output{}, ctx.Err()
	}
	defer func() { <-e.slots }()
	lim = lim.withDefaults()
	v := e.take(endpoint, s)
	if v == nil {
		var err error
		if v, err = newVM(s, e.w, lim); err != nil {
			return Output{}, err
		}
	}
	out, err := v.call(e.w, lim, ctx.Done(), in)
	if err != nil {
		return Output{}, err
	}
	e.put(endpoint, v)
	return out, nil
}

// take returns an idle runtime of endpoint's script s, or nil.
func (e *Engine) take(endpoint string, s *Script) *vm {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pools[endpoint]
	if p == nil || p.version != s.version || len(p.idle) == 0 {
		return nil
	}
	v := p.idle[len(p.idle)-1]
	p.idle = p.idle[:len(p.idle)-1]
	return v
}

// put keeps v idle for its endpoint, replacing the runtimes of an older
// script version.
func (e *Engine) put(endpoint string, v *vm) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.pools[endpoint]
	if p == nil || p.version != v.script.version {
		p = &pool{version: v.script.version}
		e.pools[endpoint] = p
	}
	if len(p.idle) < e.maxIdle {
		p.idle = append(p.idle, v)
	}
}

package transform

import (
	"runtime/metrics"
	"sync"
	"time"

	"github.com/dop251/goja"
)

// watchInterval is how often the watchdog looks at the runs it watches.
const watchInterval = time.Millisecond

// heapMetric is the heap's size in objects (live, and dead not yet swept):
// what a run that allocates grows.
const heapMetric = "/memory/classes/heap/objects:bytes"

// watchdog interrupts the runs it watches once they pass their deadline or
// the heap grew by more than their memory limit since they began. The heap
// is the process's, so the limit counts what other goroutines allocated
// meanwhile too: it is a guard against a script that builds a huge value,
// not an accounting. One goroutine serves every run; it sleeps while there
// is none. stop ends it and waits for it.
type watchdog struct {
	mu     sync.Mutex
	runs   map[*watched]struct{}
	wake   chan struct{}
	done   chan struct{}
	exited chan struct{}
	sample []metrics.Sample
}

// watched is one run under watch.
type watched struct {
	rt       *goja.Runtime
	deadline time.Time
	heap0    uint64
	maxMem   uint64
	done     <-chan struct{}
	// why is set once the run was interrupted.
	why       Kind
	hit       bool
	cancelled bool
	start     time.Time
}

func newWatchdog() *watchdog {
	w := &watchdog{
		runs:   make(map[*watched]struct{}),
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
		sample: []metrics.Sample{{Name: heapMetric}},
	}
	go w.loop()
	return w
}

func (w *watchdog) heap() uint64 {
	metrics.Read(w.sample)
	if w.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return w.sample[0].Value.Uint64()
}

// watch starts watching a run of rt; done, when not nil, ends it early
// (a context's Done).
func (w *watchdog) watch(rt *goja.Runtime, timeout time.Duration, maxMem int64, done <-chan struct{}) *watched {
	now := time.Now()
	r := &watched{rt: rt, start: now, deadline: now.Add(timeout), maxMem: uint64(maxMem), done: done}
	w.mu.Lock()
	r.heap0 = w.heap()
	w.runs[r] = struct{}{}
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	return r
}

// unwatch stops watching r and reports why it was interrupted, if it was.
func (w *watchdog) unwatch(r *watched) (Kind, bool) {
	w.mu.Lock()
	delete(w.runs, r)
	why, hit := r.why, r.hit
	w.mu.Unlock()
	return why, hit
}

func (w *watchdog) stop() {
	close(w.done)
	<-w.exited
}

func (w *watchdog) loop() {
	defer close(w.exited)
	t := time.NewTicker(watchInterval)
	defer t.Stop()
	for {
		w.mu.Lock()
		idle := len(w.runs) == 0
		w.mu.Unlock()
		if idle {
			select {
			case <-w.done:
				return
			case <-w.wake:
			}
		}
		select {
		case <-w.done:
			return
		case <-t.C:
		}
		w.check()
	}
}

func (w *watchdog) check() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.runs) == 0 {
		return
	}
	now := time.Now()
	heap := w.heap()
	for r := range w.runs {
		if r.hit {
			continue
		}
		switch {
		case now.After(r.deadline):
			r.why, r.hit = KindTimeout, true
		case r.done != nil && isDone(r.done):
			r.why, r.hit, r.cancelled = KindTimeout, true, true
		case heap > r.heap0 && heap-r.heap0 > r.maxMem:
			r.why, r.hit = KindMemory, true
		default:
			continue
		}
		r.rt.Interrupt(r.why)
	}
}

func isDone(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

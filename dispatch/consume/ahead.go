package consume

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// aheadQueue is the events the fan-out holds pulled ahead of its unsettled
// slots. held counts the events queued or asked for: a pull takes room for
// what it asks, a worker gives one back as it takes an event. bytes bounds
// the payloads queued and the byte limits of the pulls out at fanoutBytes
// (one pull may always go out).
type aheadQueue struct {
	queue chan Pulled
	bytes *Budget
	// pullBytes is each pull's byte limit: fanoutBytes / 16, or more for
	// large events; fanoutBytes once a pull came back empty at once (an
	// event over its limit).
	pullBytes atomic.Int64
	taken     atomic.Int64 // events the workers took, ever

	mu    sync.Mutex
	held  int
	limit int
	rate  float64       // events taken per second, the recent peak
	freed chan struct{} // closed and replaced when held drops; nil until a pull waits
}

func newAheadQueue(maxMsg int64) *aheadQueue {
	// The queue holds what the room allows, and events of pulls given up.
	a := &aheadQueue{queue: make(chan Pulled, 2*fanoutAhead), bytes: NewBudget(fanoutBytes), limit: 2 * fanoutChunk}
	a.pullBytes.Store(min(fanoutBytes, max(fanoutBytes/16, 2*maxMsg)))
	return a
}

// take takes room for n more events, waiting until they fit under the
// limit (or nothing is held); false when ctx is done, or with the error
// that arrived on failed meanwhile.
func (a *aheadQueue) take(ctx context.Context, n int, failed <-chan error) (bool, error) {
	for {
		a.mu.Lock()
		if a.held == 0 || a.held+n <= a.limit {
			a.held += n
			a.mu.Unlock()
			return true, nil
		}
		if a.freed == nil {
			a.freed = make(chan struct{})
		}
		ch := a.freed
		a.mu.Unlock()
		select {
		case <-ch:
		case err := <-failed:
			return false, err
		case <-ctx.Done():
			return false, nil
		}
	}
}

// force counts an event of size bytes that arrived for a pull already
// given up: it holds room and bytes beyond the limits until taken.
func (a *aheadQueue) force(size int64) {
	a.mu.Lock()
	a.held++
	a.mu.Unlock()
	a.bytes.mu.Lock()
	a.bytes.used += size
	a.bytes.mu.Unlock()
}

// give gives back room for n events.
func (a *aheadQueue) give(n int) {
	a.mu.Lock()
	a.held -= n
	if a.freed != nil {
		close(a.freed)
		a.freed = nil
	}
	a.mu.Unlock()
}

func (a *aheadQueue) took(p Pulled) {
	a.bytes.Release(int64(len(p.Msg.Data())))
	a.taken.Add(1)
	a.give(1)
}

// pace sets the limit to aheadHorizon of the recent peak of events taken
// per second, every aheadTick until ctx is done. The peak decays slowly, so
// a wait for the server does not shrink what is asked for next.
func (a *aheadQueue) pace(ctx context.Context) {
	t := time.NewTicker(aheadTick)
	defer t.Stop()
	last := a.taken.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := a.taken.Load()
		a.mu.Lock()
		a.rate = max(float64(n-last)/aheadTick.Seconds(), 0.95*a.rate)
		a.limit = min(fanoutAhead, max(2*fanoutChunk, int(a.rate*aheadHorizon.Seconds())))
		if a.freed != nil {
			close(a.freed)
			a.freed = nil
		}
		a.mu.Unlock()
		last = n
	}
}

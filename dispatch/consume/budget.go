package consume

import (
	"context"
	"sync"
)

// Budget bounds bytes held: the pulls' byte limits and the events held
// ahead here, the payloads of unsettled fan-out events in the engine, so
// that large events cannot pile up in memory behind slow endpoints:
// Acquire waits while the budget is spent. One event larger than
// the whole budget is let through alone.
type Budget struct {
	mu    sync.Mutex
	cond  *sync.Cond
	used  int64
	limit int64
}

// NewBudget returns a budget of limit bytes.
func NewBudget(limit int64) *Budget {
	b := &Budget{limit: limit}
	b.cond = sync.NewCond(&b.mu)
	return b
}

// Acquire takes n bytes, waiting until they fit or ctx is done (false).
func (b *Budget) Acquire(ctx context.Context, n int64) bool {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.cond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.used > 0 && b.used+n > b.limit {
		if ctx.Err() != nil {
			return false
		}
		b.cond.Wait()
	}
	b.used += n
	return true
}

func (b *Budget) Release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.cond.Broadcast()
	b.mu.Unlock()
}

// Used is how many bytes are taken.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

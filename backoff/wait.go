package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Sleep waits for d or until ctx is done, whichever comes first.
func Sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// Jitter returns a uniformly random duration in [0, upTo), from the global
// generator (safe for concurrent use); 0 when upTo is not positive.
func Jitter(upTo time.Duration) time.Duration {
	if upTo <= 0 {
		return 0
	}
	return rand.N(upTo)
}

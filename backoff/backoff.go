// Package backoff computes how long a failed delivery waits before its next
// attempt: full-jitter exponential backoff after a transient failure
// ([Full]), and the destination's own Retry-After, clamped and jittered,
// after it rate-limited ([RateLimit]). Both are pure functions of their
// arguments and a random source; the engine's settlement calls them.
package backoff

import (
	"math"
	"math/rand/v2"
	"time"
)

// maxDuration is the largest representable time.Duration (about 292 years).
const maxDuration = time.Duration(math.MaxInt64)

// defaultRateLimitWait is how long [RateLimit] waits when the destination
// rate-limited without saying for how long.
const defaultRateLimitWait = 5 * time.Second

// Full returns the wait before retry number attempt (0 for the first
// retry) with "full jitter": a uniformly random duration in
// [0, min(limit, base·2^attempt)]. It never overflows, whatever attempt is; a
// negative attempt counts as 0, and a non-positive base or limit yields 0.
// rnd may be nil to use the global generator, which is safe for concurrent
// use; a non-nil rnd is not.
func Full(base, limit time.Duration, attempt int, rnd *rand.Rand) time.Duration {
	if base <= 0 || limit <= 0 {
		return 0
	}
	attempt = clampInt(attempt, 0, 63)
	ceiling := limit
	// base<<attempt ≤ limit exactly when base ≤ limit>>attempt, which cannot overflow.
	if base <= limit>>attempt {
		ceiling = base << attempt
	}
	return uniform(ceiling, rnd)
}

// RateLimit returns how long to wait after a receiver rate-limited a
// request: retryAfter clamped to limit (a non-positive limit does not clamp),
// plus a jitter of up to 10% or one second, whichever is smaller, so that
// retries from many workers do not arrive at the same instant. Jitter is only
// ever added: the result is never earlier than the clamped Retry-After. A
// zero retryAfter (the receiver did not say) waits min(limit, 5s) plus jitter.
func RateLimit(retryAfter, limit time.Duration, rnd *rand.Rand) time.Duration {
	w := retryAfter
	if w <= 0 {
		w = defaultRateLimitWait
	}
	if limit > 0 && w > limit {
		w = limit
	}
	jitter := min(w/10, time.Second)
	if jitter <= 0 {
		return w
	}
	j := uniform(jitter, rnd)
	if w > maxDuration-j {
		return maxDuration
	}
	return w + j
}

// uniform returns a uniformly random duration in [0, ceiling].
func uniform(ceiling time.Duration, rnd *rand.Rand) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	n := int64(ceiling)
	if n < math.MaxInt64 {
		n++ // make the range inclusive
	}
	if rnd == nil {
		return time.Duration(rand.Int64N(n))
	}
	return time.Duration(rnd.Int64N(n))
}

func clampInt(v, lo, hi int) int {
	return min(max(v, lo), hi)
}

package deliver

import (
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"
)

// maxDuration is the largest representable time.Duration (about 292 years).
const maxDuration = time.Duration(math.MaxInt64)

// defaultRateLimitWait is how long [RateLimitWait] waits when the receiver
// rate-limited without saying for how long.
const defaultRateLimitWait = 5 * time.Second

// ParseRetryAfter parses a Retry-After header value: either delta-seconds
// ("120") or an HTTP-date ("Fri, 31 Dec 1999 23:59:59 GMT", interpreted
// relative to now). A date in the past yields 0, true; a value that is
// neither form yields 0, false. Delta-seconds too large for a time.Duration
// saturate at the largest Duration instead of overflowing. The result is
// never negative.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if v[0] >= '0' && v[0] <= '9' {
		return parseDeltaSeconds(v)
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	d := t.Sub(now) // saturates instead of overflowing
	if d < 0 {
		return 0, true
	}
	return d, true
}

// parseDeltaSeconds parses 1*DIGIT as seconds, saturating at maxDuration.
func parseDeltaSeconds(v string) (time.Duration, bool) {
	const limit = int64(maxDuration / time.Second)
	var n int64
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n > limit {
			continue // saturated; keep validating the remaining digits
		}
		n = n*10 + int64(c-'0')
	}
	if n > limit {
		return maxDuration, true
	}
	return time.Duration(n) * time.Second, true
}

// Backoff returns the wait before retry number attempt (0 for the first
// retry) with "full jitter": a uniformly random duration in
// [0, min(limit, base·2^attempt)]. It never overflows, whatever attempt is; a
// negative attempt counts as 0, and a non-positive base or limit yields 0.
// rnd may be nil to use the global generator, which is safe for concurrent
// use; a non-nil rnd is not.
func Backoff(base, limit time.Duration, attempt int, rnd *rand.Rand) time.Duration {
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

// RateLimitWait returns how long to wait after a receiver rate-limited a
// request: retryAfter clamped to limit (a non-positive limit does not clamp),
// plus a jitter of up to 10% or one second, whichever is smaller, so that
// retries from many workers do not arrive at the same instant. Jitter is only
// ever added: the result is never earlier than the clamped Retry-After. A
// zero retryAfter (the receiver did not say) waits min(limit, 5s) plus jitter.
func RateLimitWait(retryAfter, limit time.Duration, rnd *rand.Rand) time.Duration {
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

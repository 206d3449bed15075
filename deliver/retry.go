package deliver

import (
	"math"
	"net/http"
	"strings"
	"time"
)

// maxDuration is the largest representable time.Duration (about 292 years).
const maxDuration = time.Duration(math.MaxInt64)

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

package deliver

import (
	"math"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		v      string
		want   time.Duration
		wantOK bool
	}{
		{"seconds", "120", 2 * time.Minute, true},
		{"zero", "0", 0, true},
		{"leading zeros", "007", 7 * time.Second, true},
		{"surrounding space", "  5 ", 5 * time.Second, true},
		{"largest exact", "9223372036", 9223372036 * time.Second, true},
		{"saturates", "9223372037", maxDuration, true},
		{"huge", "99999999999999999999999999999999", maxDuration, true},
		{"IMF-fixdate", now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{"RFC 850", "Wednesday, 04-Mar-26 12:01:00 GMT", time.Minute, true},
		{"asctime", "Wed Mar  4 12:00:30 2026", 30 * time.Second, true},
		{"date in the past", "Fri, 31 Dec 1999 23:59:59 GMT", 0, true},
		{"date far in the future", "Fri, 31 Dec 9999 23:59:59 GMT", time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC).Sub(now), true},
		{"empty", "", 0, false},
		{"blank", "   ", 0, false},
		{"negative", "-5", 0, false},
		{"plus sign", "+5", 0, false},
		{"fraction", "1.5", 0, false},
		{"trailing junk", "10s", 0, false},
		{"hex", "0x10", 0, false},
		{"words", "tomorrow", 0, false},
		{"ISO date", "2026-03-04T12:00:00Z", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRetryAfter(tt.v, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.v, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "-1", "99999999999999999999", "Fri, 31 Dec 1999 23:59:59 GMT",
		"Fri, 31 Dec 9999 23:59:59 GMT", "Wed Mar  4 12:00:30 2026", "", " 5 ", "1e9"} {
		f.Add(s, int64(1_700_000_000))
	}
	f.Fuzz(func(t *testing.T, v string, unix int64) {
		d, ok := ParseRetryAfter(v, time.Unix(unix, 0))
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, negative", v, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false; want 0 when invalid", v, d)
		}
	})
}

func TestBackoffBounds(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name        string
		base, limit time.Duration
	}{
		{"typical", 5 * time.Second, time.Hour},
		{"tiny base", time.Nanosecond, time.Hour},
		{"base above limit", time.Hour, time.Minute},
		{"huge limit", time.Second, maxDuration},
		{"huge base", maxDuration / 3, maxDuration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for attempt := -1; attempt <= 1000; attempt++ {
				ceiling := tt.limit
				if a := max(attempt, 0); a < 63 {
					if exp := math.Ldexp(float64(tt.base), a); exp < float64(tt.limit) {
						ceiling = tt.base << a
					}
				}
				for range 5 {
					got := Backoff(tt.base, tt.limit, attempt, rnd)
					if got < 0 || got > ceiling {
						t.Fatalf("Backoff(%v, %v, %d) = %v, want within [0, %v]", tt.base, tt.limit, attempt, got, ceiling)
					}
				}
			}
		})
	}
}

func TestBackoffDegenerate(t *testing.T) {
	tests := []struct {
		name        string
		base, limit time.Duration
	}{
		{"zero base", 0, time.Hour},
		{"negative base", -time.Second, time.Hour},
		{"zero limit", time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Backoff(tt.base, tt.limit, 3, nil); got != 0 {
				t.Errorf("Backoff = %v, want 0", got)
			}
		})
	}
}

// TestBackoffSpread checks that the jitter is real: the draws differ and
// cover both halves of [0, ceiling], for both a seeded and the global
// generator.
func TestBackoffSpread(t *testing.T) {
	const base, limit, attempt, draws = time.Second, time.Hour, 3, 10_000
	const ceiling = base << attempt
	for _, tt := range []struct {
		name string
		rnd  *rand.Rand
	}{
		{"seeded", rand.New(rand.NewPCG(3, 4))},
		{"global", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var low, high int
			seen := make(map[time.Duration]bool)
			var sum time.Duration
			for range draws {
				d := Backoff(base, limit, attempt, tt.rnd)
				seen[d] = true
				sum += d
				if d < ceiling/2 {
					low++
				} else {
					high++
				}
			}
			if len(seen) < draws/2 {
				t.Errorf("%d distinct values in %d draws", len(seen), draws)
			}
			// Each half should get about 5000; 4500 is > 10 standard deviations away.
			if low < 4500 || high < 4500 {
				t.Errorf("halves got %d and %d of %d draws", low, high, draws)
			}
			if mean := sum / draws; mean < ceiling*45/100 || mean > ceiling*55/100 {
				t.Errorf("mean %v, want about %v", mean, ceiling/2)
			}
		})
	}
}

func TestRateLimitWait(t *testing.T) {
	tests := []struct {
		name              string
		retryAfter, limit time.Duration
		lo, hi            time.Duration
	}{
		{"small", 2 * time.Second, time.Hour, 2 * time.Second, 2200 * time.Millisecond},
		{"jitter capped at 1s", 5 * time.Minute, time.Hour, 5 * time.Minute, 5*time.Minute + time.Second},
		{"clamped", 48 * time.Hour, time.Hour, time.Hour, time.Hour + time.Second},
		{"unset uses default", 0, time.Hour, 5 * time.Second, 5500 * time.Millisecond},
		{"default clamped", 0, 2 * time.Second, 2 * time.Second, 2200 * time.Millisecond},
		{"no limit", 48 * time.Hour, 0, 48 * time.Hour, 48*time.Hour + time.Second},
		{"saturated", maxDuration, 0, maxDuration, maxDuration},
		{"sub-jitter", 5 * time.Nanosecond, time.Hour, 5 * time.Nanosecond, 5 * time.Nanosecond},
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			seen := make(map[time.Duration]bool)
			for range 1000 {
				got := RateLimitWait(tt.retryAfter, tt.limit, rnd)
				if got < tt.lo || got > tt.hi {
					t.Fatalf("RateLimitWait(%v, %v) = %v, want within [%v, %v]", tt.retryAfter, tt.limit, got, tt.lo, tt.hi)
				}
				seen[got] = true
			}
			if tt.lo != tt.hi && len(seen) < 2 {
				t.Errorf("no jitter: always %v", tt.lo)
			}
		})
	}
}

func BenchmarkBackoff(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		Backoff(5*time.Second, time.Hour, 7, rnd)
	}
}

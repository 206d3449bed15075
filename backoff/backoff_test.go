package backoff

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestFullBounds(t *testing.T) {
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
					got := Full(tt.base, tt.limit, attempt, rnd)
					if got < 0 || got > ceiling {
						t.Fatalf("Full(%v, %v, %d) = %v, want within [0, %v]", tt.base, tt.limit, attempt, got, ceiling)
					}
				}
			}
		})
	}
}

func TestFullDegenerate(t *testing.T) {
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
			if got := Full(tt.base, tt.limit, 3, nil); got != 0 {
				t.Errorf("Full = %v, want 0", got)
			}
		})
	}
}

// TestFullSpread checks that the jitter is real: the draws differ and
// cover both halves of [0, ceiling], for both a seeded and the global
// generator.
func TestFullSpread(t *testing.T) {
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
				d := Full(base, limit, attempt, tt.rnd)
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

func TestRateLimit(t *testing.T) {
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
				got := RateLimit(tt.retryAfter, tt.limit, rnd)
				if got < tt.lo || got > tt.hi {
					t.Fatalf("RateLimit(%v, %v) = %v, want within [%v, %v]", tt.retryAfter, tt.limit, got, tt.lo, tt.hi)
				}
				seen[got] = true
			}
			if tt.lo != tt.hi && len(seen) < 2 {
				t.Errorf("no jitter: always %v", tt.lo)
			}
		})
	}
}

func BenchmarkFull(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 1))
	b.ReportAllocs()
	for b.Loop() {
		Full(5*time.Second, time.Hour, 7, rnd)
	}
}

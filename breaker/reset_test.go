package breaker_test

import (
	"testing"
	"time"

	"github.com/hookjet/hookjet/breaker"
)

// Reset closes an open or half-open breaker at once, with
// its base cooldown and no failures, and reports the transition; a closed
// breaker only forgets its failures.
func TestReset(t *testing.T) {
	s := breaker.Settings{FailureThreshold: 2, Cooldown: time.Minute, MaxCooldown: time.Hour}
	tests := []struct {
		name        string
		prepare     func(t *testing.T, f *fixture)
		wantChanged bool
		wantFrom    breaker.State
	}{
		{"open", func(t *testing.T, f *fixture) { f.trip(t, 2) }, true, breaker.Open},
		{"open after a failed probe (doubled cooldown)", func(t *testing.T, f *fixture) {
			f.trip(t, 2)
			f.clock.Advance(time.Minute)
			f.send(t, breaker.Failure) // the probe fails: open for 2m
		}, true, breaker.Open},
		{"half-open with its probe out", func(t *testing.T, f *fixture) {
			f.trip(t, 2)
			f.clock.Advance(time.Minute)
			if ok, _ := f.reg.Acquire(ep); !ok {
				t.Fatal("probe refused")
			}
		}, true, breaker.HalfOpen},
		{"closed with failures", func(t *testing.T, f *fixture) { f.send(t, breaker.Failure) }, false, breaker.Closed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, s)
			tt.prepare(t, f)
			f.takeTransitions()
			if got := f.reg.Reset(ep); got != tt.wantChanged {
				t.Fatalf("Reset = %v, want %v", got, tt.wantChanged)
			}
			h := f.health(t)
			if h.State != breaker.Closed || h.ConsecutiveFailures != 0 || h.Cooldown != time.Minute || !h.OpenUntil.IsZero() {
				t.Fatalf("after Reset: %+v, want closed, 0 failures, 1m cooldown", h)
			}
			for range 3 { // every request goes, not only one probe
				if ok, wait := f.reg.Acquire(ep); !ok {
					t.Fatalf("Acquire refused after Reset (wait %v)", wait)
				}
				f.reg.Release(ep)
			}
			trs := f.takeTransitions()
			if tt.wantChanged && (len(trs) != 1 || trs[0].From != tt.wantFrom || trs[0].To != breaker.Closed) {
				t.Fatalf("transitions %+v, want one %v -> closed", trs, tt.wantFrom)
			}
			if !tt.wantChanged && len(trs) != 0 {
				t.Fatalf("transitions %+v, want none", trs)
			}
			if tt.wantChanged { // the transition is persisted before it is reported
				f.reopen(t)
				f.reg.Configure(ep, s)
				if h := f.health(t); h.State != breaker.Closed || h.ConsecutiveFailures != 0 {
					t.Fatalf("after restart: %+v", h)
				}
			}
		})
	}
	if f := newFixture(t, s); f.reg.Reset("nope") {
		t.Fatal("Reset of an unknown id reported a change")
	}
}

package breaker_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/internal/testkit"
	bolt "go.etcd.io/bbolt"
)

const ep = "crm"

// fixture is a registry on a real file with a manual clock that records
// the transitions it reports.
type fixture struct {
	reg   *breaker.Registry
	clock *testkit.Clock
	db    *bolt.DB
	path  string

	mu          sync.Mutex
	transitions []breaker.Transition
}

func newFixture(t *testing.T, s breaker.Settings) *fixture {
	t.Helper()
	f := &fixture{clock: testkit.NewClock(), path: testkit.TempPath(t)}
	f.open(t)
	f.reg.Configure(ep, s)
	return f
}

// open (re)opens the file and a registry on it.
func (f *fixture) open(t *testing.T) {
	t.Helper()
	f.db = testkit.OpenDB(t, f.path)
	reg, err := breaker.NewRegistry(f.db,
		breaker.WithClock(f.clock.Now),
		breaker.WithOnTransition(func(tr breaker.Transition) {
			f.mu.Lock()
			f.transitions = append(f.transitions, tr)
			f.mu.Unlock()
		}))
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	f.reg = reg
}

// reopen simulates a crash and restart: the file is closed without a
// Flush and a new registry loads it.
func (f *fixture) reopen(t *testing.T) {
	t.Helper()
	testkit.CloseDB(t, f.db)
	f.open(t)
}

func (f *fixture) takeTransitions() []breaker.Transition {
	f.mu.Lock()
	defer f.mu.Unlock()
	trs := f.transitions
	f.transitions = nil
	return trs
}

func (f *fixture) health(t *testing.T) breaker.Health {
	t.Helper()
	h, ok := f.reg.Health(ep)
	if !ok {
		t.Fatalf("Health(%q): not configured", ep)
	}
	return h
}

// send acquires and records one request with result res.
func (f *fixture) send(t *testing.T, res breaker.Result) {
	t.Helper()
	if ok, wait := f.reg.Acquire(ep); !ok {
		t.Fatalf("Acquire refused (wait %v), want allowed", wait)
	}
	f.reg.Record(ep, res, 10*time.Millisecond, false)
}

// trip opens the breaker with threshold failures.
func (f *fixture) trip(t *testing.T, threshold int) {
	t.Helper()
	for range threshold {
		f.send(t, breaker.Failure)
	}
	if h := f.health(t); h.State != breaker.Open {
		t.Fatalf("state after %d failures = %v, want open", threshold, h.State)
	}
}

func wantRefused(t *testing.T, reg *breaker.Registry, wantWait time.Duration) {
	t.Helper()
	ok, wait := reg.Acquire(ep)
	if ok {
		t.Fatal("Acquire allowed, want refused")
	}
	if wait != wantWait {
		t.Errorf("wait = %v, want %v", wait, wantWait)
	}
}

func TestThreshold(t *testing.T) {
	const (
		F = breaker.Failure
		S = breaker.Success
		N = breaker.Neutral
	)
	tests := []struct {
		name            string
		results         []breaker.Result
		wantState       breaker.State
		wantConsecutive int
	}{
		{name: "below threshold", results: []breaker.Result{F, F}, wantState: breaker.Closed, wantConsecutive: 2},
		{name: "at threshold", results: []breaker.Result{F, F, F}, wantState: breaker.Open, wantConsecutive: 3},
		{name: "success resets", results: []breaker.Result{F, F, S, F, F}, wantState: breaker.Closed, wantConsecutive: 2},
		{name: "neutral resets", results: []breaker.Result{F, F, N, F, F}, wantState: breaker.Closed, wantConsecutive: 2},
		{name: "neutral is no failure", results: []breaker.Result{N, N, N, N}, wantState: breaker.Closed, wantConsecutive: 0},
		{name: "unknown result ignored", results: []breaker.Result{F, F, breaker.Result(42), F}, wantState: breaker.Open, wantConsecutive: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, breaker.Settings{FailureThreshold: 3, Cooldown: time.Minute})
			for _, res := range tt.results {
				f.send(t, res)
			}
			h := f.health(t)
			if h.State != tt.wantState || h.ConsecutiveFailures != tt.wantConsecutive {
				t.Errorf("state %v with %d consecutive failures, want %v with %d",
					h.State, h.ConsecutiveFailures, tt.wantState, tt.wantConsecutive)
			}
			if tt.wantState == breaker.Open {
				now := f.clock.Now()
				if !h.OpenedAt.Equal(now) || !h.OpenUntil.Equal(now.Add(time.Minute)) || h.Cooldown != time.Minute {
					t.Errorf("opened at %v until %v cooldown %v, want %v until %v cooldown 1m",
						h.OpenedAt, h.OpenUntil, h.Cooldown, now, now.Add(time.Minute))
				}
				f.clock.Advance(20 * time.Second)
				wantRefused(t, f.reg, 40*time.Second)
			}
		})
	}
}

func TestHalfOpenSingleProbe(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 2, Cooldown: time.Minute})
	f.trip(t, 2)
	wantRefused(t, f.reg, time.Minute)
	f.clock.Advance(time.Minute)

	const callers = 50
	var (
		allowed atomic.Int32
		start   = make(chan struct{})
		wg      sync.WaitGroup
		waits   = make(chan time.Duration, callers)
	)
	for range callers {
		wg.Go(func() {
			<-start
			if ok, wait := f.reg.Acquire(ep); ok {
				allowed.Add(1)
			} else {
				waits <- wait
			}
		})
	}
	close(start)
	wg.Wait()
	close(waits)

	if n := allowed.Load(); n != 1 {
		t.Fatalf("%d of %d concurrent Acquire calls allowed, want exactly 1", n, callers)
	}
	for wait := range waits {
		if wait != breaker.ProbeRetry {
			t.Errorf("refused caller told to wait %v, want %v", wait, breaker.ProbeRetry)
		}
	}
	if h := f.health(t); h.State != breaker.HalfOpen {
		t.Errorf("state = %v, want half_open", h.State)
	}

	// Release frees the probe slot for exactly one more caller.
	f.reg.Release(ep)
	if ok, _ := f.reg.Acquire(ep); !ok {
		t.Fatal("Acquire after Release refused, want the probe")
	}
	wantRefused(t, f.reg, breaker.ProbeRetry)
}

// Giving back an ordinary permission, taken while the breaker was closed,
// never frees the probe slot of a breaker that has since become half-open.
func TestReleaseOfNonProbeKeepsTheProbe(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 2, Cooldown: time.Minute, MaxCooldown: time.Hour})
	ok, probe, _ := f.reg.AcquireProbe(ep) // closed: an ordinary permission
	if !ok || probe {
		t.Fatalf("closed breaker: ok %v probe %v, want an ordinary permission", ok, probe)
	}
	f.trip(t, 2)
	f.clock.Advance(time.Minute)
	ok, probe, _ = f.reg.AcquireProbe(ep)
	if !ok || !probe {
		t.Fatalf("after the cooldown: ok %v probe %v, want the probe", ok, probe)
	}
	f.reg.ReleaseProbe(ep, false) // the old, ordinary permission comes back
	wantRefused(t, f.reg, breaker.ProbeRetry)
}

func TestProbeResult(t *testing.T) {
	tests := []struct {
		name         string
		probe        breaker.Result
		wantState    breaker.State
		wantCooldown time.Duration
	}{
		{name: "success closes", probe: breaker.Success, wantState: breaker.Closed, wantCooldown: time.Minute},
		// A 429 proves nothing about health: half-open stays,
		// and the next request probes again.
		{name: "neutral stays half-open", probe: breaker.Neutral, wantState: breaker.HalfOpen, wantCooldown: time.Minute},
		{name: "failure reopens with double cooldown", probe: breaker.Failure, wantState: breaker.Open, wantCooldown: 2 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, breaker.Settings{FailureThreshold: 2, Cooldown: time.Minute, MaxCooldown: time.Hour})
			f.trip(t, 2)
			f.clock.Advance(time.Minute)
			f.send(t, tt.probe)

			h := f.health(t)
			if h.State != tt.wantState || h.Cooldown != tt.wantCooldown {
				t.Fatalf("after probe: %v with cooldown %v, want %v with %v", h.State, h.Cooldown, tt.wantState, tt.wantCooldown)
			}
			switch tt.wantState {
			case breaker.Closed:
				if !h.OpenedAt.IsZero() || !h.OpenUntil.IsZero() {
					t.Errorf("closed breaker reports opened %v until %v, want zero times", h.OpenedAt, h.OpenUntil)
				}
				// Closed for good: the next run of failures opens it
				// with the base cooldown again.
				f.send(t, breaker.Success)
				f.trip(t, 2)
				wantRefused(t, f.reg, time.Minute)
			case breaker.Open:
				wantRefused(t, f.reg, tt.wantCooldown)
			}
		})
	}
}

func TestCooldownDoublesUpToMax(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 1, Cooldown: time.Minute, MaxCooldown: 5 * time.Minute})
	f.trip(t, 1)

	cooldown := time.Minute
	for _, want := range []time.Duration{2 * time.Minute, 4 * time.Minute, 5 * time.Minute, 5 * time.Minute} {
		f.clock.Advance(cooldown - time.Nanosecond)
		wantRefused(t, f.reg, time.Nanosecond)
		f.clock.Advance(time.Nanosecond)
		f.send(t, breaker.Failure) // the probe fails
		wantRefused(t, f.reg, want)
		if h := f.health(t); h.Cooldown != want {
			t.Fatalf("cooldown = %v, want %v", h.Cooldown, want)
		}
		cooldown = want
	}

	f.clock.Advance(cooldown)
	f.send(t, breaker.Success)
	if h := f.health(t); h.State != breaker.Closed || h.Cooldown != time.Minute {
		t.Fatalf("after successful probe: %v with cooldown %v, want closed with 1m", h.State, h.Cooldown)
	}
}

func TestSlowEndpointHalvesThreshold(t *testing.T) {
	tests := []struct {
		name      string
		threshold int
		slowP95   time.Duration
		samples   int           // successes recorded before the failures
		latency   time.Duration // latency of those successes
		failures  int
		wantState breaker.State
	}{
		{name: "slow opens at half", threshold: 10, slowP95: time.Second, samples: 20, latency: 2 * time.Second, failures: 5, wantState: breaker.Open},
		{name: "slow below half stays closed", threshold: 10, slowP95: time.Second, samples: 20, latency: 2 * time.Second, failures: 4, wantState: breaker.Closed},
		{name: "fast endpoint needs the full threshold", threshold: 10, slowP95: time.Second, samples: 20, latency: 100 * time.Millisecond, failures: 9, wantState: breaker.Closed},
		{name: "too few samples to judge", threshold: 10, slowP95: time.Second, samples: 14, latency: 2 * time.Second, failures: 5, wantState: breaker.Closed},
		{name: "half of one is one", threshold: 1, slowP95: time.Second, samples: 20, latency: 2 * time.Second, failures: 1, wantState: breaker.Open},
		{name: "half of three is one", threshold: 3, slowP95: time.Second, samples: 20, latency: 2 * time.Second, failures: 1, wantState: breaker.Open},
		{name: "detection disabled", threshold: 10, slowP95: -1, samples: 20, latency: 2 * time.Minute, failures: 9, wantState: breaker.Closed},
		{name: "default slow p95 is 5s", threshold: 10, slowP95: 0, samples: 20, latency: 6 * time.Second, failures: 5, wantState: breaker.Open},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, breaker.Settings{FailureThreshold: tt.threshold, Cooldown: time.Minute, SlowP95: tt.slowP95})
			for range tt.samples {
				f.reg.Record(ep, breaker.Success, tt.latency, true)
			}
			// Failures that come back fast; 20 samples of the slow
			// latency keep the p95 high with up to 5% fast ones.
			for range tt.failures {
				f.reg.Record(ep, breaker.Failure, tt.latency, false)
			}
			if h := f.health(t); h.State != tt.wantState {
				t.Errorf("state = %v after %d failures (p95 %v, %d samples), want %v",
					h.State, tt.failures, h.P95, h.Samples, tt.wantState)
			}
		})
	}
}

func TestStaleResultsDoNotMoveTheBreaker(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 2, Cooldown: time.Minute})
	f.trip(t, 2)
	// Requests sent before the breaker opened come back while it is open.
	f.reg.Record(ep, breaker.Success, time.Millisecond, false)
	f.reg.Record(ep, breaker.Failure, time.Millisecond, false)
	if h := f.health(t); h.State != breaker.Open || h.Samples != 4 {
		t.Fatalf("after stale results: %v with %d samples, want open with 4", h.State, h.Samples)
	}
	// The cooldown passed but nobody holds the probe yet.
	f.clock.Advance(time.Minute)
	if ok, _ := f.reg.Acquire(ep); !ok {
		t.Fatal("probe refused")
	}
	f.reg.Release(ep)
	f.reg.Record(ep, breaker.Success, time.Millisecond, false)
	if h := f.health(t); h.State != breaker.HalfOpen {
		t.Fatalf("a result without a probe out moved half_open to %v", h.State)
	}
	f.send(t, breaker.Success)
	if h := f.health(t); h.State != breaker.Closed {
		t.Fatalf("probe success left state %v, want closed", h.State)
	}
}

func TestTransitionsReported(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 1, Cooldown: time.Minute, MaxCooldown: time.Hour})
	t0 := f.clock.Now()
	f.trip(t, 1)
	f.clock.Advance(time.Minute)
	f.send(t, breaker.Failure)
	f.clock.Advance(2 * time.Minute)
	f.send(t, breaker.Success)

	want := []breaker.Transition{
		{Endpoint: ep, From: breaker.Closed, To: breaker.Open, Cooldown: time.Minute, At: t0},
		{Endpoint: ep, From: breaker.Open, To: breaker.HalfOpen, Cooldown: time.Minute, At: t0.Add(time.Minute)},
		{Endpoint: ep, From: breaker.HalfOpen, To: breaker.Open, Cooldown: 2 * time.Minute, At: t0.Add(time.Minute)},
		{Endpoint: ep, From: breaker.Open, To: breaker.HalfOpen, Cooldown: 2 * time.Minute, At: t0.Add(3 * time.Minute)},
		{Endpoint: ep, From: breaker.HalfOpen, To: breaker.Closed, Cooldown: time.Minute, At: t0.Add(3 * time.Minute)},
	}
	got := f.takeTransitions()
	if len(got) != len(want) {
		t.Fatalf("got %d transitions %+v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("transition %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestCallbackMayUseRegistry(t *testing.T) {
	c := testkit.NewClock()
	db := testkit.OpenDB(t, testkit.TempPath(t))
	var (
		reg     *breaker.Registry
		states  []breaker.State
		healthy []breaker.State
	)
	reg, err := breaker.NewRegistry(db, breaker.WithClock(c.Now), breaker.WithOnTransition(func(tr breaker.Transition) {
		states = append(states, tr.To)
		h, _ := reg.Health(tr.Endpoint)
		healthy = append(healthy, h.State)
		if tr.To == breaker.HalfOpen {
			// A callback that itself causes a transition must not
			// deadlock; its transition is reported after this one.
			reg.Record(tr.Endpoint, breaker.Success, time.Millisecond, false)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	reg.Configure(ep, breaker.Settings{FailureThreshold: 1, Cooldown: time.Minute})
	reg.Record(ep, breaker.Failure, time.Millisecond, false)
	c.Advance(time.Minute)
	if ok, _ := reg.Acquire(ep); !ok {
		t.Fatal("probe refused")
	}
	wantStates := []breaker.State{breaker.Open, breaker.HalfOpen, breaker.Closed}
	if len(states) != len(wantStates) {
		t.Fatalf("reported %v, want %v", states, wantStates)
	}
	for i := range wantStates {
		if states[i] != wantStates[i] {
			t.Errorf("reported %v, want %v", states, wantStates)
			break
		}
	}
	if healthy[0] != breaker.Open {
		t.Errorf("Health during the open report = %v, want open", healthy[0])
	}
}

func TestPercentiles(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	// 1ms, 2ms, ..., 1000ms in a scrambled order; every other request is
	// a first attempt and every third first attempt fails.
	const n = 1000
	firsts, firstOK := 0, 0
	for i := range n {
		ms := (i*7919)%n + 1
		first := i%2 == 0
		res := breaker.Success
		if first {
			firsts++
			if firsts%3 == 0 {
				res = breaker.Neutral
			} else {
				firstOK++
			}
		}
		f.reg.Record(ep, res, time.Duration(ms)*time.Millisecond, first)
	}
	h := f.health(t)
	if h.Samples != n {
		t.Errorf("Samples = %d, want %d", h.Samples, n)
	}
	for _, q := range []struct {
		name string
		got  time.Duration
		want time.Duration
	}{
		{"p50", h.P50, 500 * time.Millisecond},
		{"p95", h.P95, 950 * time.Millisecond},
		{"p99", h.P99, 990 * time.Millisecond},
	} {
		if rel := math.Abs(float64(q.got-q.want)) / float64(q.want); rel > 0.10 {
			t.Errorf("%s = %v, want %v within 10%% (off by %.1f%%)", q.name, q.got, q.want, rel*100)
		}
	}
	if h.FirstAttempts != int64(firsts) {
		t.Errorf("FirstAttempts = %d, want %d", h.FirstAttempts, firsts)
	}
	if want := float64(firstOK) / float64(firsts); math.Abs(h.FirstAttemptSuccessRate-want) > 1e-9 {
		t.Errorf("FirstAttemptSuccessRate = %v, want %v", h.FirstAttemptSuccessRate, want)
	}
}

func TestPercentileRange(t *testing.T) {
	tests := []struct {
		name    string
		latency time.Duration
		want    time.Duration
	}{
		{name: "below range", latency: 3 * time.Microsecond, want: 100 * time.Microsecond},
		{name: "zero", latency: 0, want: 100 * time.Microsecond},
		{name: "above range", latency: 10 * time.Minute, want: 120 * time.Second},
		{name: "low edge", latency: 100 * time.Microsecond, want: 100 * time.Microsecond},
		{name: "inside", latency: 37 * time.Millisecond, want: 37 * time.Millisecond},
		{name: "high edge", latency: 119 * time.Second, want: 119 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, breaker.Settings{})
			f.reg.Record(ep, breaker.Success, tt.latency, false)
			h := f.health(t)
			if rel := math.Abs(float64(h.P50-tt.want)) / float64(tt.want); rel > 0.08 {
				t.Errorf("p50 = %v, want %v within 8%%", h.P50, tt.want)
			}
			if h.P50 != h.P99 {
				t.Errorf("one sample: p50 %v != p99 %v", h.P50, h.P99)
			}
		})
	}
}

func TestEmptyStats(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	h := f.health(t)
	if h != (breaker.Health{State: breaker.Closed, Cooldown: breaker.DefaultCooldown}) {
		t.Errorf("Health of a new endpoint = %+v", h)
	}
}

func TestWindowDropsOldSamples(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	// Start at the top of an hour so that hour slots are easy to reason about.
	f.clock.Advance(time.Duration(60-f.clock.Now().Minute())*time.Minute - time.Duration(f.clock.Now().Second())*time.Second)

	for range 100 {
		f.reg.Record(ep, breaker.Success, 10*time.Millisecond, true)
	}
	f.clock.Advance(12 * time.Hour)
	for range 100 {
		f.reg.Record(ep, breaker.Failure, time.Second, true)
	}

	steps := []struct {
		advance      time.Duration
		wantSamples  int64
		wantP50      time.Duration
		wantFirstOK  float64
		wantFirstAtt int64
	}{
		{advance: 0, wantSamples: 200, wantP50: 10 * time.Millisecond, wantFirstOK: 0.5, wantFirstAtt: 200},
		{advance: 12*time.Hour - time.Second, wantSamples: 200, wantP50: 10 * time.Millisecond, wantFirstOK: 0.5, wantFirstAtt: 200},
		{advance: time.Second, wantSamples: 100, wantP50: time.Second, wantFirstOK: 0, wantFirstAtt: 100}, // the first hour is 24h old
		{advance: 12 * time.Hour, wantSamples: 0, wantP50: 0, wantFirstOK: 0, wantFirstAtt: 0},
	}
	for i, st := range steps {
		f.clock.Advance(st.advance)
		h := f.health(t)
		if h.Samples != st.wantSamples || h.FirstAttempts != st.wantFirstAtt || h.FirstAttemptSuccessRate != st.wantFirstOK {
			t.Errorf("step %d: samples %d, first attempts %d, first success rate %v; want %d, %d, %v",
				i, h.Samples, h.FirstAttempts, h.FirstAttemptSuccessRate, st.wantSamples, st.wantFirstAtt, st.wantFirstOK)
		}
		if rel := math.Abs(float64(h.P50 - st.wantP50)); rel > 0.08*float64(st.wantP50) {
			t.Errorf("step %d: p50 = %v, want %v", i, h.P50, st.wantP50)
		}
	}

	// The ring keeps working after it has wrapped.
	f.reg.Record(ep, breaker.Success, 50*time.Millisecond, false)
	if h := f.health(t); h.Samples != 1 {
		t.Errorf("samples after wrap = %d, want 1", h.Samples)
	}
}

func TestClockGoingBack(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	f.reg.Record(ep, breaker.Success, time.Millisecond, false)
	f.clock.Advance(-30 * time.Hour)
	f.reg.Record(ep, breaker.Success, time.Millisecond, false)
	if h := f.health(t); h.Samples != 2 {
		t.Errorf("samples = %d, want 2 (a late sample counts in the newest hour)", h.Samples)
	}
}

func TestPersistence(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 3, Cooldown: time.Minute})
	for i := range 40 {
		f.reg.Record(ep, breaker.Success, time.Duration(i+1)*time.Millisecond, i%2 == 0)
	}
	before := f.health(t)
	if err := f.reg.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}

	// Opening is written at once: no Flush before the "crash".
	f.trip(t, 3)
	opened := f.health(t)
	f.clock.Advance(10 * time.Second)
	f.reopen(t)

	// Unconfigured ids are ignored even when state is stored for them.
	if ok, _ := f.reg.Acquire(ep); !ok {
		t.Fatal("Acquire refused before Configure")
	}
	f.reg.Configure(ep, breaker.Settings{FailureThreshold: 3, Cooldown: time.Minute})
	wantRefused(t, f.reg, 50*time.Second)

	h := f.health(t)
	if h.State != breaker.Open || !h.OpenedAt.Equal(opened.OpenedAt) || !h.OpenUntil.Equal(opened.OpenUntil) ||
		h.ConsecutiveFailures != 3 || !h.LastFailure.Equal(opened.LastFailure) || !h.LastSuccess.Equal(before.LastSuccess) {
		t.Errorf("after reopen: %+v\nwant breaker of %+v", h, opened)
	}
	if h.P50 != opened.P50 || h.P95 != opened.P95 || h.P99 != opened.P99 || h.Samples != opened.Samples ||
		h.FirstAttempts != before.FirstAttempts || h.FirstAttemptSuccessRate != before.FirstAttemptSuccessRate {
		t.Errorf("stats after reopen: %+v\nwant stats of %+v", h, opened)
	}

	// The restored breaker carries on: probe after the cooldown.
	f.clock.Advance(50 * time.Second)
	f.send(t, breaker.Success)
	if h := f.health(t); h.State != breaker.Closed {
		t.Errorf("state after probe = %v, want closed", h.State)
	}
}

func TestRecordDoesNoIO(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	writes := pageWrites(f.db)
	for range 100 {
		f.send(t, breaker.Success)
	}
	if got := pageWrites(f.db); got != writes {
		t.Fatalf("100 Records wrote %d pages, want none before Flush", got-writes)
	}
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := pageWrites(f.db); got == writes {
		t.Fatal("Flush wrote nothing")
	}
	writes = pageWrites(f.db)
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := pageWrites(f.db); got != writes {
		t.Fatal("Flush with nothing dirty wrote pages")
	}
}

func TestRemove(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 1})
	f.trip(t, 1)
	f.reg.Remove(ep)
	if _, ok := f.reg.Health(ep); ok {
		t.Error("Health reports a removed endpoint")
	}
	if ok, _ := f.reg.Acquire(ep); !ok {
		t.Error("Acquire refused for a removed endpoint")
	}
	f.reg.Record(ep, breaker.Failure, time.Millisecond, false) // ignored, no panic
	f.reg.Release(ep)
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	f.reopen(t)
	f.reg.Configure(ep, breaker.Settings{FailureThreshold: 1})
	if h := f.health(t); h.State != breaker.Closed || h.Samples != 0 {
		t.Errorf("after Remove and reopen: %+v, want fresh state", h)
	}
}

// An id removed and configured again before a Flush starts fresh after a
// restart: the new breaker is clean, so Flush must still delete the old record.
func TestRemoveThenConfigureBeforeFlush(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 1})
	f.trip(t, 1)
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	f.reg.Remove(ep)
	f.reg.Configure(ep, breaker.Settings{FailureThreshold: 1})
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	f.reopen(t)
	f.reg.Configure(ep, breaker.Settings{FailureThreshold: 1})
	if h := f.health(t); h.State != breaker.Closed || h.Samples != 0 {
		t.Errorf("after Remove, Configure and reopen: %+v, want fresh state", h)
	}
}

// Configuring endpoints that never send writes nothing: 100,000 idle
// endpoints cost Flush no I/O.
func TestIdleEndpointsWriteNothing(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	writes := pageWrites(f.db)
	cs := make([]breaker.Config, 10_000)
	for i := range cs {
		cs[i] = breaker.Config{ID: fmt.Sprintf("idle-%05d", i)}
	}
	f.reg.ConfigureAll(cs)
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := pageWrites(f.db); got != writes {
		t.Fatalf("Flush after configuring 10,000 idle endpoints wrote %d pages, want 0", got-writes)
	}
}

// States follows transitions, restores and removals.
func TestStatesCounts(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 1, Cooldown: time.Minute})
	f.reg.ConfigureAll([]breaker.Config{{ID: "b"}, {ID: "c"}})
	want := func(closed, halfOpen, open int) {
		t.Helper()
		if c, h, o := f.reg.States(); c != closed || h != halfOpen || o != open {
			t.Fatalf("States() = %d closed, %d half-open, %d open; want %d, %d, %d", c, h, o, closed, halfOpen, open)
		}
	}
	want(3, 0, 0)
	f.trip(t, 1)
	want(2, 0, 1)
	f.clock.Advance(time.Minute)
	if ok, _ := f.reg.Acquire(ep); !ok { // the probe: half-open
		t.Fatal("no probe after the cooldown")
	}
	want(2, 1, 0)
	f.reg.Record(ep, breaker.Failure, time.Millisecond, false)
	want(2, 0, 1)
	if err := f.reg.Flush(); err != nil {
		t.Fatal(err)
	}
	f.reopen(t)
	f.reg.ConfigureAll([]breaker.Config{{ID: ep, Settings: breaker.Settings{FailureThreshold: 1}}, {ID: "b"}})
	want(1, 0, 1)
	f.reg.Remove(ep)
	f.reg.Remove(ep)
	want(1, 0, 0)
}

func TestConfigureUpdates(t *testing.T) {
	f := newFixture(t, breaker.Settings{FailureThreshold: 5, Cooldown: time.Minute})
	f.send(t, breaker.Failure)
	f.reg.Configure(ep, breaker.Settings{FailureThreshold: 2, Cooldown: 3 * time.Minute})
	f.send(t, breaker.Failure)
	wantRefused(t, f.reg, 3*time.Minute)
}

func TestUndecodableRecordsIgnored(t *testing.T) {
	path := testkit.TempPath(t)
	db := testkit.OpenDB(t, path)
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("breaker"))
		if err != nil {
			return err
		}
		if err := b.Put([]byte("garbage"), []byte("{not json")); err != nil {
			return err
		}
		return b.Put([]byte("future"), []byte(`{"v":2,"state":2}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := breaker.NewRegistry(db)
	if err != nil {
		t.Fatalf("NewRegistry: %v", err)
	}
	for _, id := range []string{"garbage", "future"} {
		reg.Configure(id, breaker.Settings{})
		if h, _ := reg.Health(id); h.State != breaker.Closed {
			t.Errorf("%s: state %v, want closed", id, h.State)
		}
	}
}

func TestRunFlushes(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.reg.Run(ctx)
	}()
	f.reg.Record(ep, breaker.Success, time.Millisecond, true)
	cancel()
	<-done

	f.reopen(t)
	f.reg.Configure(ep, breaker.Settings{})
	if h := f.health(t); h.Samples != 1 {
		t.Errorf("samples after Run returned = %d, want 1 (final flush)", h.Samples)
	}
}

func TestStateString(t *testing.T) {
	tests := []struct {
		give fmtStringer
		want string
	}{
		{breaker.Closed, "closed"},
		{breaker.HalfOpen, "half_open"},
		{breaker.Open, "open"},
		{breaker.State(9), "State(9)"},
		{breaker.Success, "success"},
		{breaker.Failure, "failure"},
		{breaker.Neutral, "neutral"},
		{breaker.Result(-1), "Result(-1)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.give.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
	if breaker.Closed != 0 || breaker.HalfOpen != 1 || breaker.Open != 2 {
		t.Error("State values must match the hookjet_breaker_state gauge: 0 closed, 1 half-open, 2 open")
	}
}

type fmtStringer interface{ String() string }

func TestAcquireRecordDoNotAllocate(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	allocs := testing.AllocsPerRun(1000, func() {
		if ok, _ := f.reg.Acquire(ep); ok {
			f.reg.Record(ep, breaker.Success, 3*time.Millisecond, true)
		}
	})
	if allocs != 0 {
		t.Errorf("Acquire+Record allocate %v times per call, want 0", allocs)
	}
}

func BenchmarkAcquireRecord(b *testing.B) {
	reg, err := breaker.NewRegistry(testkit.OpenDB(b, testkit.TempPath(b)))
	if err != nil {
		b.Fatal(err)
	}
	reg.Configure(ep, breaker.Settings{})
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := reg.Acquire(ep); ok {
			reg.Record(ep, breaker.Success, 3*time.Millisecond, true)
		}
	}
}

// pageWrites returns how many page writes db has performed.
func pageWrites(db *bolt.DB) int64 {
	st := db.Stats()
	return st.TxStats.GetWrite()
}

// BenchmarkFlush100kIdle measures one Flush with 100,000 configured
// endpoints of which 10 changed: the per-second cost of a large, mostly idle
// installation.
func BenchmarkFlush100kIdle(b *testing.B) {
	reg, err := breaker.NewRegistry(testkit.OpenDB(b, testkit.TempPath(b)))
	if err != nil {
		b.Fatal(err)
	}
	cs := make([]breaker.Config, 100_000)
	for i := range cs {
		cs[i] = breaker.Config{ID: fmt.Sprintf("ep-%06d", i)}
	}
	reg.ConfigureAll(cs)
	b.ReportAllocs()
	for b.Loop() {
		for i := range 10 {
			reg.Record(cs[i*9973].ID, breaker.Success, time.Millisecond, true)
		}
		if err := reg.Flush(); err != nil {
			b.Fatal(err)
		}
	}
}

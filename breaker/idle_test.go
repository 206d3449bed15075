package breaker_test

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/hookjet/hookjet/breaker"
)

// An endpoint that has sent nothing costs the registry its id's map entry,
// not a breaker: 100,000 idle endpoints, which cost about 280 bytes each
// when every one had its breaker from the start.
func TestIdleEndpointsCostNoBreaker(t *testing.T) {
	f := newFixture(t, breaker.Settings{})
	cs := make([]breaker.Config, 100_000)
	for i := range cs {
		cs[i] = breaker.Config{ID: fmt.Sprintf("idle-%06d", i)}
	}
	before := heapAlloc()
	f.reg.ConfigureAll(cs)
	after := heapAlloc()
	perEndpoint := (float64(after) - float64(before)) / float64(len(cs))
	t.Logf("%.0f B of heap per idle endpoint", perEndpoint)
	if perEndpoint > 100 {
		t.Errorf("configuring 100,000 idle endpoints took %.0f B of heap each, want <= 100", perEndpoint)
	}
	runtime.KeepAlive(cs)

	// An idle endpoint reads as a fresh breaker, and counts as closed.
	h, ok := f.reg.Health(cs[7].ID)
	if !ok || h.State != breaker.Closed || h.Samples != 0 || h.Cooldown != breaker.DefaultCooldown {
		t.Errorf("Health of an idle endpoint = %+v, %v; want closed, no samples, default cooldown", h, ok)
	}
	if c, _, _ := f.reg.States(); c != len(cs)+1 { // and the fixture's own
		t.Errorf("States() closed = %d, want %d", c, len(cs)+1)
	}

	// Its first result makes the breaker, with the configured settings.
	f.reg.Configure(cs[7].ID, breaker.Settings{FailureThreshold: 1, Cooldown: time.Minute})
	if ok, _ := f.reg.Acquire(cs[7].ID); !ok {
		t.Fatal("Acquire refused an idle endpoint")
	}
	f.reg.Record(cs[7].ID, breaker.Failure, time.Millisecond, true)
	if h, _ := f.reg.Health(cs[7].ID); h.State != breaker.Open || h.Cooldown != time.Minute || h.Samples != 1 {
		t.Errorf("after one failure at threshold 1: %+v, want open for 1m with 1 sample", h)
	}
	if c, _, o := f.reg.States(); c != len(cs) || o != 1 {
		t.Errorf("States() = %d closed, %d open; want %d, 1", c, o, len(cs))
	}

	// Removed, it is unknown again.
	f.reg.Remove(cs[8].ID)
	if _, ok := f.reg.Health(cs[8].ID); ok {
		t.Error("Health of a removed idle endpoint: ok")
	}
	f.reg.Record(cs[8].ID, breaker.Failure, time.Millisecond, true)
	if _, ok := f.reg.Health(cs[8].ID); ok {
		t.Error("a result for a removed endpoint made its breaker again")
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

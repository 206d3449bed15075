package webhook_test

import (
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/webhook"
)

func newFakeClock() *testkit.Clock { return testkit.NewClockAt(specTime) }

func TestDeduperFirst(t *testing.T) {
	const ttl = time.Hour
	type step struct {
		advance time.Duration // before the call
		forget  bool          // call Forget(id) instead of First(id)
		id      string
		want    bool // First's result
		wantLen int  // Len() after the call
	}
	tests := []struct {
		name       string
		maxEntries int
		steps      []step
	}{
		{name: "duplicate within ttl", maxEntries: 10, steps: []step{
			{id: "a", want: true, wantLen: 1},
			{id: "a", want: false, wantLen: 1},
			{id: "b", want: true, wantLen: 2},
			{advance: ttl - time.Nanosecond, id: "a", want: false, wantLen: 2},
		}},
		{name: "expires after ttl", maxEntries: 10, steps: []step{
			{id: "a", want: true, wantLen: 1},
			{advance: ttl / 2, id: "b", want: true, wantLen: 2},
			{advance: ttl / 2, id: "a", want: true, wantLen: 2}, // a expired and came back
			{id: "b", want: false, wantLen: 2},
			{advance: ttl / 2, id: "c", want: true, wantLen: 2}, // b expired
			{id: "b", want: true, wantLen: 3},
		}},
		{name: "a repeat does not extend the ttl", maxEntries: 10, steps: []step{
			{id: "a", want: true, wantLen: 1},
			{advance: ttl - time.Minute, id: "a", want: false, wantLen: 1},
			{advance: time.Minute, id: "a", want: true, wantLen: 1},
		}},
		{name: "oldest evicted at maxEntries", maxEntries: 3, steps: []step{
			{id: "a", want: true, wantLen: 1},
			{id: "b", want: true, wantLen: 2},
			{id: "c", want: true, wantLen: 3},
			{id: "d", want: true, wantLen: 3}, // evicts a
			{id: "b", want: false, wantLen: 3},
			{id: "c", want: false, wantLen: 3},
			{id: "d", want: false, wantLen: 3},
			{id: "a", want: true, wantLen: 3}, // evicts b
			{id: "c", want: false, wantLen: 3},
			{id: "b", want: true, wantLen: 3}, // evicts c
		}},
		{name: "maxEntries 1", maxEntries: 1, steps: []step{
			{id: "a", want: true, wantLen: 1},
			{id: "a", want: false, wantLen: 1},
			{id: "b", want: true, wantLen: 1},
			{id: "a", want: true, wantLen: 1},
		}},
		{name: "forget", maxEntries: 2, steps: []step{
			{id: "a", want: true, wantLen: 1},
			{forget: true, id: "a", wantLen: 0},
			{id: "a", want: true, wantLen: 1},
			{id: "a", want: false, wantLen: 1},
			{forget: true, id: "unknown", wantLen: 1},
			{id: "b", want: true, wantLen: 2},
			{id: "c", want: true, wantLen: 2}, // evicts the stale slot of the first a, then a
			{id: "b", want: false, wantLen: 2},
		}},
		{name: "forgotten id re-seen keeps its new ttl", maxEntries: 10, steps: []step{
			{id: "a", want: true, wantLen: 1},
			{advance: ttl / 2, forget: true, id: "a", wantLen: 0},
			{id: "a", want: true, wantLen: 1},
			{advance: ttl / 2, id: "a", want: false, wantLen: 1}, // the first slot expiring must not drop it
			{advance: ttl / 2, id: "a", want: true, wantLen: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := newFakeClock()
			d := webhook.NewDeduper(ttl, tt.maxEntries, webhook.WithClock(clock.Now))
			for i, s := range tt.steps {
				clock.Advance(s.advance)
				if s.forget {
					d.Forget(s.id)
				} else if got := d.First(s.id); got != s.want {
					t.Fatalf("step %d: First(%q) = %v, want %v", i, s.id, got, s.want)
				}
				if got := d.Len(); got != s.wantLen {
					t.Fatalf("step %d: Len() = %d, want %d", i, got, s.wantLen)
				}
			}
		})
	}
}

// TestDeduperEvictionOrder crosses the ring buffer's growth and wrap-around.
func TestDeduperEvictionOrder(t *testing.T) {
	const maxEntries = 100
	clock := newFakeClock()
	d := webhook.NewDeduper(time.Hour, maxEntries, webhook.WithClock(clock.Now))
	const total = 350
	for i := range total {
		if !d.First(strconv.Itoa(i)) {
			t.Fatalf("First(%d) = false on first sight", i)
		}
	}
	if got := d.Len(); got != maxEntries {
		t.Fatalf("Len() = %d, want %d", got, maxEntries)
	}
	// The newest maxEntries ids are remembered (First returns false and
	// changes nothing)...
	for i := total - maxEntries; i < total; i++ {
		if d.First(strconv.Itoa(i)) {
			t.Fatalf("First(%d) = true, want false: a recent id was evicted", i)
		}
	}
	// ...and the one just before them was evicted.
	if !d.First(strconv.Itoa(total - maxEntries - 1)) {
		t.Fatalf("First(%d) = false, want true: the oldest id was kept", total-maxEntries-1)
	}
	// After the ttl everything is forgotten.
	clock.Advance(time.Hour)
	if !d.First("0") {
		t.Fatal("First(0) after ttl = false, want true")
	}
	if got := d.Len(); got != 1 {
		t.Fatalf("Len() after ttl = %d, want 1", got)
	}
}

func TestDeduperDefaults(t *testing.T) {
	clock := newFakeClock()
	d := webhook.NewDeduper(0, -1, webhook.WithClock(clock.Now))
	if !d.First("a") || d.First("a") {
		t.Fatal("First does not dedupe with default settings")
	}
	clock.Advance(webhook.DefaultDedupeTTL - time.Second)
	if d.First("a") {
		t.Fatal("id forgotten before DefaultDedupeTTL")
	}
	clock.Advance(time.Second)
	if !d.First("a") {
		t.Fatal("id remembered past DefaultDedupeTTL")
	}
}

func TestDeduperConcurrent(t *testing.T) {
	const (
		goroutines = 8
		ids        = 2000
		maxEntries = ids // nothing is evicted, so exactly one First per id wins
	)
	clock := newFakeClock()
	d := webhook.NewDeduper(time.Hour, maxEntries, webhook.WithClock(clock.Now))
	var wins [ids]atomic.Int32
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range ids {
				id := (i + g*ids/goroutines) % ids // start at different points
				if d.First(strconv.Itoa(id)) {
					wins[id].Add(1)
				}
				if i%100 == 0 {
					_ = d.Len()
				}
			}
		})
	}
	wg.Wait()
	for id := range wins {
		if n := wins[id].Load(); n != 1 {
			t.Errorf("id %d: First returned true %d times, want 1", id, n)
		}
	}
}

func BenchmarkDeduperFirst(b *testing.B) {
	d := webhook.NewDeduper(time.Hour, 10_000)
	ids := make([]string, 20_000) // twice maxEntries: steady eviction
	for i := range ids {
		ids[i] = "msg_" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		d.First(ids[i%len(ids)])
		i++
	}
}

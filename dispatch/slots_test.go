package dispatch

import (
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

// A burst to an endpoint that frees its slots fast waits in the fan-out
// past the static bound (4 x max_in_flight) instead of being parked; a slow
// endpoint, or one whose first requests have been out for a second, gets
// only the static bound; and the second budget is bounded too.
func TestFastEndpointsWaitPastTheStaticBound(t *testing.T) {
	d := &admitter{global: make(chan struct{}, 8), unsettled: 32}
	s := &settings{ep: &config.Endpoint{Settings: config.Settings{MaxInFlight: 1}}}
	// gap: the average time between releases; busy: how long ago the
	// last release was, or the busy spell began.
	newEndpoint := func(gap, busy time.Duration) *endpoint {
		e := newEndpoint("e")
		e.slots.setLimit(1)
		e.slots.gap.Store(int64(gap))
		e.slots.since.Store(time.Now().Add(-busy).UnixNano())
		return e
	}
	waits := func(e *endpoint, n int) (static, fast int) {
		for range n {
			ok, f := d.startWaiting(e, s)
			switch {
			case ok && f:
				fast++
			case ok:
				static++
			}
		}
		return static, fast
	}

	unknown := newEndpoint(0, time.Second)
	if st, f := waits(unknown, 10); st != 4 || f != 0 {
		t.Fatalf("no release in the second since the first request: %d static and %d fast waits, want 4 and 0", st, f)
	}
	slow := newEndpoint(time.Second, 0)
	if st, f := waits(slow, 10); st != 4 || f != 0 {
		t.Fatalf("a slot freed every second: %d static and %d fast waits, want 4 and 0", st, f)
	}
	turned := newEndpoint(time.Millisecond, time.Second)
	if st, f := waits(turned, 10); st != 0 || f != 0 {
		t.Fatalf("fast until a second ago, the static budget spent: %d static and %d fast waits, want 0 and 0", st, f)
	}
	// The static budget (8 in the process) is spent: a fast endpoint
	// waits in the second one, up to half the unsettled events each (16)
	// and, with the 8 static waits, as many as the fan-out holds
	// unsettled (32) in all.
	fast := newEndpoint(time.Millisecond, 0)
	if st, f := waits(fast, 20); st != 0 || f != 16 {
		t.Fatalf("a slot freed every millisecond: %d static and %d fast waits, want 0 and 16", st, f)
	}
	other := newEndpoint(0, 0) // its first requests have just gone out
	if st, f := waits(other, 20); st != 0 || f != 8 {
		t.Fatalf("a second fast endpoint: %d static and %d fast waits, want 0 and 8 (the rest of 32)", st, f)
	}
	d.stopWaiting(slow, false)
	if ok, f := d.startWaiting(unknown, s); ok || f {
		t.Fatal("a wait the endpoint's static bound refuses was let in")
	}
	if ok, f := d.startWaiting(slow, s); !ok || f {
		t.Fatalf("a static wait given back is not taken again: ok %v fast %v", ok, f)
	}
}

// slots.gap follows how often slots are freed.
func TestSlotsMeasureHowOftenTheyFree(t *testing.T) {
	var s slots
	s.setLimit(4)
	if !s.tryAcquire() {
		t.Fatal("no slot")
	}
	time.Sleep(50 * time.Millisecond)
	if s.soonFree(10, 1, 100*time.Millisecond) {
		t.Fatal("soonFree for 10 with no release in the 50 ms since the first request")
	}
	s.release()
	for range 40 {
		if !s.tryAcquire() {
			t.Fatal("no slot")
		}
		time.Sleep(time.Millisecond)
		s.release()
	}
	if g := time.Duration(s.gap.Load()); g < time.Millisecond || g > 50*time.Millisecond {
		t.Fatalf("gap %s after releases about 1 ms apart", g)
	}
	if !s.soonFree(10, 1, time.Second) || s.soonFree(10_000, 1, time.Second) {
		t.Fatalf("soonFree disagrees with a gap of %s", time.Duration(s.gap.Load()))
	}
}

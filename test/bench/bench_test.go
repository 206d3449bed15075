package main

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPayloadRoundTrip(t *testing.T) {
	sent := time.Unix(1_790_000_000, 123_456_789)
	for _, tt := range []struct {
		name string
		n    int
		ep   int
	}{
		{"first", 0, 0},
		{"middle", 4242, 7},
		{"large", 9_999_999_999, 999},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := appendPayload(nil, tt.n, sent, tt.ep)
			if len(b) != payloadSize {
				t.Errorf("size %d, want %d", len(b), payloadSize)
			}
			n, at, ok := parsePayload(b)
			if !ok || n != tt.n || at != sent.UnixNano() {
				t.Errorf("parsePayload = %d, %d, %v; want %d, %d, true", n, at, ok, tt.n, sent.UnixNano())
			}
			if !strings.Contains(string(b), `"type":"`+eventType(tt.ep)+`"`) {
				t.Errorf("payload lacks its event type: %s", b)
			}
		})
	}
	for _, bad := range []string{"", `{"n":12}`, strings.Repeat("x", payloadSize)} {
		if _, _, ok := parsePayload([]byte(bad)); ok {
			t.Errorf("parsePayload(%q) ok", bad)
		}
	}
}

func TestSchedule(t *testing.T) {
	want := map[string]bool{"raw": true, "healthy10": true, "cost": true, "dead10": true}
	got := schedule(want, 2)
	exp := []string{"raw", "healthy10", "dead10", "raw", "healthy10", "dead10", "cost"}
	if !slices.Equal(got, exp) {
		t.Errorf("schedule = %v, want %v", got, exp)
	}
}

func TestDisturbedAndBest(t *testing.T) {
	rs := []*result{
		{Name: "raw", PerSecond: 100, OtherCPUPercent: 80},
		{Name: "healthy10", PerSecond: 50, OtherCPUPercent: 90},
		{Name: "raw", PerSecond: 120, OtherCPUPercent: 5},
		{Name: "healthy10", PerSecond: 40, OtherCPUPercent: 60},
	}
	want := map[string]bool{"raw": true, "healthy10": true}
	if got := disturbed(rs, want); !slices.Equal(got, []string{"healthy10"}) {
		t.Errorf("disturbed = %v, want [healthy10]", got)
	}
	markBest(rs)
	for i, wantBest := range []bool{false, true, true, false} {
		if rs[i].Best != wantBest {
			t.Errorf("result %d (%s run %d): best = %v, want %v", i, rs[i].Name, rs[i].Run, rs[i].Best, wantBest)
		}
	}
	if rs[2].Run != 2 || rs[3].Run != 2 {
		t.Errorf("runs not numbered: %d, %d", rs[2].Run, rs[3].Run)
	}
}

func TestNewTallyCompletes(t *testing.T) {
	x := newTally([]behaviour{healthy, dead, healthy}, 6, false)
	if got := x.healthyExpected(); got != 4 {
		t.Fatalf("healthyExpected = %d, want 4", got)
	}
	now := time.Now()
	for n := range 6 {
		ep := n % 3
		if ep == 1 {
			continue // the dead endpoint never records
		}
		x.record(ep, appendPayload(nil, n, now, ep), nil, nil)
		x.record(ep, appendPayload(nil, n, now, ep), nil, nil) // a duplicate
	}
	select {
	case <-x.done:
	default:
		t.Fatal("done not closed after every healthy endpoint got its events")
	}
	if got, _ := x.healthyDeliveries(); got != 4 {
		t.Errorf("healthyDeliveries = %d, want 4", got)
	}
	if d := x.duplicates.Load(); d != 4 {
		t.Errorf("duplicates = %d, want 4", d)
	}
	if l := len(x.healthyLatencies()); l != 4 {
		t.Errorf("%d latencies, want 4", l)
	}
}

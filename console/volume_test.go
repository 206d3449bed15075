package console

import (
	"net/url"
	"strings"
	"testing"
	"time"
)

// The hourly chart has a slot for each of 24 hours, however few attempts
// there are: an hour without attempts is a zero, never skipped; successes
// and failures are counted apart; records that are not requests are not
// counted; the axis counts in whole numbers.
func TestHourlyVolumeShowsEveryHourWithFewPoints(t *testing.T) {
	now := time.Date(2026, 12, 7, 14, 20, 0, 0, time.UTC)
	v := hourlyVolume([]attempt{
		{StartedAt: now.Add(-5 * time.Minute), Class: "success"},
		{StartedAt: now.Add(-6 * time.Minute), Class: "transient", Status: 503},
		{StartedAt: now.Add(-3 * time.Hour), Class: "success"},
		{StartedAt: now.Add(-3 * time.Hour), Class: "dead_letter"},
		{StartedAt: now.Add(-3 * time.Hour), Class: "parked"},
		{StartedAt: now.Add(-30 * time.Hour), Class: "success"}, // before the 24 hours
	}, now, time.Time{})
	if len(v.Hours) != 24 || !v.Partial.IsZero() {
		t.Fatalf("%d hours, partial %v", len(v.Hours), v.Partial)
	}
	if first, last := v.Hours[0].Start, v.Hours[23].Start; !first.Equal(time.Date(2026, 12, 6, 15, 0, 0, 0, time.UTC)) || !last.Equal(time.Date(2026, 12, 7, 14, 0, 0, 0, time.UTC)) {
		t.Fatalf("hours from %v to %v", first, last)
	}
	if h := v.Hours[23]; h.Delivered != 1 || h.Failed != 1 || !strings.Contains(h.Title, "14:00–15:00 UTC: 1 delivery, 1 failed attempt") {
		t.Errorf("this hour: %+v", h)
	}
	if h := v.Hours[20]; h.Delivered != 1 || h.Failed != 0 {
		t.Errorf("three hours ago: %+v", h)
	}
	zero := v.Hours[5]
	if !zero.Counted || zero.Delivered != 0 || zero.OK.H != 0 || !strings.HasSuffix(zero.Title, "0 deliveries, 0 failed attempts") {
		t.Errorf("an hour without attempts: %+v", zero)
	}
	if v.Delivered != 2 || v.Failed != 1 {
		t.Errorf("totals %d delivered, %d failed", v.Delivered, v.Failed)
	}
	var labels []string
	for _, tk := range v.YTicks {
		labels = append(labels, tk.Label)
	}
	if strings.Join(labels, " ") != "0 1" {
		t.Errorf("y ticks %v, want 0 1", labels)
	}
	if full := v.Hours[23].OK; full.Y != volumeTop || full.H != float64(v.Bottom-volumeTop) {
		t.Errorf("the tallest bar %+v does not reach the top of the axis", full)
	}
	if len(v.XTicks) != 8 || v.XTicks[0].Label != "15:00" {
		t.Errorf("x ticks %+v", v.XTicks)
	}
}

// When the records read do not reach back 24 hours, the hours before the
// oldest are "not counted", not zero, and the hour it falls in counts "at
// least" what was read.
func TestHourlyVolumeSaysWhatItDidNotCount(t *testing.T) {
	now := time.Date(2026, 12, 7, 14, 20, 0, 0, time.UTC)
	from := now.Add(-2*time.Hour - 30*time.Minute) // 11:50
	v := hourlyVolume([]attempt{{StartedAt: now, Class: "success"}, {StartedAt: from, Class: "transient"}}, now, from)
	if !v.Partial.Equal(from) {
		t.Fatalf("partial from %v, want 11:50", v.Partial)
	}
	for _, h := range v.Hours {
		counted := h.Start.Hour() >= 11 && h.Start.Day() == 7
		if h.Counted != counted || h.AtLeast != (h.Start.Hour() == 11 && counted) {
			t.Errorf("hour %v counted %v, at least %v", h.Start, h.Counted, h.AtLeast)
		}
	}
	if v.Delivered != 1 || v.Failed != 1 || !strings.Contains(v.Hours[19].Title, "not counted") || !strings.Contains(v.Hours[20].Title, "at least 0 deliveries, 1 failed attempt") {
		t.Errorf("delivered %d, failed %d; 10:00 says %q, 11:00 %q", v.Delivered, v.Failed, v.Hours[19].Title, v.Hours[20].Title)
	}
}

func TestCountScale(t *testing.T) {
	for _, tt := range []struct{ most, top, step int }{
		{0, 1, 1}, {1, 1, 1}, {3, 3, 1}, {5, 5, 1}, {6, 6, 2}, {9, 10, 2}, {23, 25, 5}, {101, 150, 50}, {1234, 1500, 500},
	} {
		if top, step := countScale(tt.most); top != tt.top || step != tt.step {
			t.Errorf("countScale(%d) = %d, %d; want %d, %d", tt.most, top, step, tt.top, tt.step)
		}
	}
}

func TestPortalFormHeadersAndEvents(t *testing.T) {
	h, err := formHeaders(url.Values{"headers": {"x-api-key: abc\n\n  X-Tenant : acme:eu "}})
	if err != nil || len(h) != 2 || h["X-Api-Key"] != "abc" || h["X-Tenant"] != "acme:eu" {
		t.Fatalf("headers %v, %v", h, err)
	}
	if h, err := formHeaders(url.Values{}); h != nil || err != nil {
		t.Fatalf("no headers field: %v %v, want nil (keep them)", h, err)
	}
	if h, err := formHeaders(url.Values{"headers": {"X-A: 1"}, "headers_clear": {"1"}}); err != nil || h == nil || len(h) != 0 {
		t.Fatalf("remove all: %v %v, want an empty map", h, err)
	}
	if _, err := formHeaders(url.Values{"headers": {"X-A: 1\nX-B"}}); err == nil || err.Error() != "headers: line 2: write it as Name: value" {
		t.Fatalf("a line without a value: %v", err)
	}
	ev := formEvents(url.Values{"types": {"order.created", "order.paid"}, "events": {"order.paid, invoice.*"}})
	if strings.Join(ev, " ") != "order.created order.paid invoice.*" {
		t.Fatalf("events %v", ev)
	}
}

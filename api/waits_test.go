package api

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// Waits is the one answer to "why do deliveries to this endpoint wait":
// each fact gives its reason, with until when and a detail, in a fixed
// order; an endpoint that can take deliveries gets none.
func TestWaits(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	later := now.Add(5 * time.Minute)
	for _, tt := range []struct {
		name    string
		f       WaitFacts
		reasons []string
		until   []*time.Time
		details []string
	}{
		{"nothing", WaitFacts{RateLimit: 10, Tokens: 3, MaxInFlight: 4, InFlight: 3}, nil, nil, nil},
		{"disabled", WaitFacts{Disabled: true, DisabledReason: "answered 410 Gone"}, []string{WaitDisabled}, []*time.Time{nil}, []string{"answered 410 Gone"}},
		{"held", WaitFacts{HoldUntil: later, HoldCause: "429"}, []string{WaitHeld}, []*time.Time{&later}, []string{"429"}},
		{"a hold over", WaitFacts{HoldUntil: now, HoldCause: "429"}, nil, nil, nil},
		{"breaker open", WaitFacts{BreakerOpen: true, BreakerOpenUntil: later, ConsecutiveFailures: 10}, []string{WaitBreakerOpen}, []*time.Time{&later}, []string{"10 consecutive failures; then one probe request"}},
		{"half open", WaitFacts{BreakerHalfOpen: true}, []string{WaitHalfOpen}, []*time.Time{nil}, []string{"one probe request at a time until one succeeds"}},
		{"in flight full", WaitFacts{MaxInFlight: 2, InFlight: 2}, []string{WaitInFlightFull}, []*time.Time{nil}, []string{"max_in_flight 2"}},
		{"taken", WaitFacts{Taken: 3, TakenUntil: later}, []string{WaitTaken}, []*time.Time{&later}, []string{"3 taken before this process started"}},
		{"keys held", WaitFacts{HeldKeys: &HeldKeys{Count: 2, Oldest: &now, Why: map[string]int{HeldDeadLetter: 1, HeldRetrying: 1}}}, []string{WaitKeysHeld}, []*time.Time{nil},
			[]string{"2 keys, the oldest since 2026-12-01T08:00:00Z; why: 1 retrying, 1 dead_letter"}},
		{"no key held", WaitFacts{HeldKeys: &HeldKeys{}}, nil, nil, nil},
		{"retries", WaitFacts{Retries: 20, NextRetry: later}, []string{WaitRetryScheduled}, []*time.Time{&later}, []string{"20 retries waiting for their due time"}},
		{"a retry stored by another process", WaitFacts{Retries: 1}, []string{WaitRetryScheduled}, []*time.Time{nil}, []string{"1 retry waiting for its due time"}},
		{"all, in order", WaitFacts{
			Taken: 1, TakenUntil: later, MaxInFlight: 1, InFlight: 1, RateLimit: 2, Tokens: 0.5,
			BreakerOpen: true, BreakerOpenUntil: later, HoldUntil: later, Disabled: true,
			HeldKeys: &HeldKeys{Count: 1}, Retries: 1,
		}, []string{WaitDisabled, WaitHeld, WaitBreakerOpen, WaitRateLimited, WaitInFlightFull, WaitTaken, WaitKeysHeld, WaitRetryScheduled}, nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Waits("ep", tt.f, now)
			var reasons []string
			for i, w := range got {
				reasons = append(reasons, w.Reason)
				if w.Endpoint != "ep" {
					t.Errorf("wait %d names endpoint %q", i, w.Endpoint)
				}
				if tt.until != nil && !timeEq(w.Until, tt.until[i]) {
					t.Errorf("%s until %v, want %v", w.Reason, w.Until, tt.until[i])
				}
				if tt.details != nil && w.Detail != tt.details[i] {
					t.Errorf("%s detail %q, want %q", w.Reason, w.Detail, tt.details[i])
				}
			}
			if !slices.Equal(reasons, tt.reasons) {
				t.Fatalf("reasons %v, want %v", reasons, tt.reasons)
			}
		})
	}
}

func timeEq(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b) && a.Location() == time.UTC
}

// The rate limit waits until the next token: half a token short at 2 per
// second is 250ms.
func TestWaitsRateLimitedUntilTheNextToken(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	got := Waits("ep", WaitFacts{RateLimit: 2, Tokens: 0.5}, now)
	if len(got) != 1 || got[0].Reason != WaitRateLimited || got[0].Until == nil ||
		!got[0].Until.Equal(now.Add(250*time.Millisecond)) || got[0].Detail != "rate_limit.rps 2" {
		t.Fatalf("rate limited: %+v", got)
	}
}

// Brief is the CLI's WAITING column; Describe says the same in words an
// operator acts on; Find picks one reason out.
func TestBriefDescribeFind(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	until := now.Add(40 * time.Minute)
	waits := []Wait{{Endpoint: "crm", Reason: WaitBreakerOpen, Until: &until, Detail: "10 consecutive failures; then one probe request"}, {Endpoint: "crm", Reason: WaitInFlightFull}}
	if got := Brief(waits); got != "breaker_open until 2026-12-01T08:40:00Z,in_flight_full" {
		t.Fatalf("Brief = %q", got)
	}
	if got := Brief(nil); got != "-" {
		t.Fatalf("Brief(nil) = %q", got)
	}
	d := Describe(waits[0], now)
	for _, want := range []string{"endpoint crm", "circuit breaker open until 2026-12-01T08:40:00Z (in 40m0s)", "hookjet endpoints reset crm"} {
		if !strings.Contains(d, want) {
			t.Errorf("Describe = %q, want %q in it", d, want)
		}
	}
	if d := Describe(Wait{Reason: WaitDisabled, Endpoint: "crm", Detail: "answered 410 Gone"}, now); !strings.Contains(d, "hookjet endpoints --enable crm") || !strings.Contains(d, "(answered 410 Gone)") {
		t.Errorf("Describe(disabled) = %q", d)
	}
	if d := Describe(Wait{Reason: "something_new"}, now); d != "the endpoint: something_new" {
		t.Errorf("Describe of an unknown reason = %q", d)
	}
	if w, ok := Find(waits, WaitInFlightFull); !ok || w.Reason != WaitInFlightFull {
		t.Fatal("Find missed in_flight_full")
	}
	if _, ok := Find(waits, WaitHeld); ok {
		t.Fatal("Find found a reason that is not there")
	}
}

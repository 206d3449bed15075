package settle

import (
	"errors"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/destination"
)

// Decide covers every row of DESIGN's outcomes table, and the limits that
// end retrying.
func TestDecide(t *testing.T) {
	s := config.Default().Defaults // base 5s, cap 1h, 20 attempts, 24h
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	fresh := now.Add(-time.Minute)
	backoff := func(n int) time.Duration { return time.Duration(n) * time.Second }
	tests := []struct {
		name      string
		attempts  int
		published time.Time
		out       destination.Result
		want      Action
	}{
		{"2xx acks", 1, fresh, destination.Result{Class: destination.Success, Status: 204}, Action{Verb: Ack}},
		{"timeout retries after backoff", 3, fresh, destination.Result{Class: destination.Transient, Err: errors.New("timeout")}, Action{Verb: Retry, Wait: 3 * time.Second}},
		{"503 retries", 1, fresh, destination.Result{Class: destination.Transient, Status: 503}, Action{Verb: Retry, Wait: time.Second}},
		{"429 holds the endpoint for Retry-After", 1, fresh, destination.Result{Class: destination.RateLimited, Status: 429, RetryAfter: 30 * time.Second}, Action{Verb: Retry, Hold: true}},
		{"410 dead-letters and disables", 1, fresh, destination.Result{Class: destination.Gone, Status: 410}, Action{Verb: DeadLetter, Reason: "gone", Disable: true}},
		{"other 4xx is permanent", 1, fresh, destination.Result{Class: destination.Permanent, Status: 422}, Action{Verb: DeadLetter, Reason: "permanent"}},
		{"3xx is permanent", 1, fresh, destination.Result{Class: destination.Permanent, Status: 302}, Action{Verb: DeadLetter, Reason: "permanent"}},
		{"refused by the guard is rejected", 1, fresh, destination.Result{Class: destination.Rejected, Err: errors.New("private address")}, Action{Verb: DeadLetter, Reason: "rejected"}},
		{"refused by the token endpoint is auth", 1, fresh, destination.Result{Class: destination.Auth, Unsent: true}, Action{Verb: DeadLetter, Reason: "auth"}},
		{"max_attempts reached: exhausted", 20, fresh, destination.Result{Class: destination.Transient, Status: 500}, Action{Verb: DeadLetter, Reason: "exhausted"}},
		{"429 at max_attempts: exhausted", 20, fresh, destination.Result{Class: destination.RateLimited, Status: 429}, Action{Verb: DeadLetter, Reason: "exhausted"}},
		{"next attempt past max_age: expired", 2, now.Add(-24*time.Hour + time.Second), destination.Result{Class: destination.Transient, Status: 500}, Action{Verb: DeadLetter, Reason: "expired"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Decide(State{Attempts: tt.attempts}, &tt.out, s, tt.published, now, backoff)
			if tt.want.Hold {
				// Retry-After plus up to 10% jitter, clamped to the cap.
				if got.Verb != Retry || !got.Hold || got.Wait < 30*time.Second || got.Wait > 33*time.Second {
					t.Fatalf("got %+v", got)
				}
				return
			}
			if got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPrecheck(t *testing.T) {
	s := config.Default().Defaults
	now := time.Now()
	if reason, _, ok := Precheck(2<<20, 1<<20, s, now, now); ok || reason != "rejected" {
		t.Fatalf("oversized payload: %q %v", reason, ok)
	}
	if reason, _, ok := Precheck(10, 1<<20, s, now.Add(-25*time.Hour), now); ok || reason != "expired" {
		t.Fatalf("old event: %q %v", reason, ok)
	}
	if _, _, ok := Precheck(10, 1<<20, s, now, now); !ok {
		t.Fatal("a fresh small event was refused")
	}
}

package admin

import (
	"testing"
	"time"
)

func TestNeedsAttention(t *testing.T) {
	now := time.Now()
	closed := BreakerStatus{State: "closed"}
	tests := []struct {
		name string
		e    EndpointStatus
		want bool
	}{
		{"healthy", EndpointStatus{Breaker: closed}, false},
		{"disabled", EndpointStatus{Breaker: closed, Disabled: true}, true},
		{"held", EndpointStatus{Breaker: closed, HeldUntil: &now}, true},
		{"breaker open", EndpointStatus{Breaker: BreakerStatus{State: "open"}}, true},
		{"half open", EndpointStatus{Breaker: BreakerStatus{State: "half_open"}}, true},
		{"failing", EndpointStatus{Breaker: BreakerStatus{State: "closed", ConsecutiveFailures: 2}}, true},
		{"dead letters", EndpointStatus{Breaker: closed, DeadLetters: 1}, true},
		{"waiting", EndpointStatus{Breaker: closed, Pending: 3}, true},
	}
	for _, tt := range tests {
		if got := NeedsAttention(tt.e); got != tt.want {
			t.Errorf("%s: NeedsAttention = %v, want %v", tt.name, got, tt.want)
		}
	}
}

package admin

import (
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
)

func TestNeedsAttention(t *testing.T) {
	now := time.Now()
	closed := api.BreakerStatus{State: "closed"}
	tests := []struct {
		name string
		e    api.EndpointStatus
		want bool
	}{
		{"healthy", api.EndpointStatus{Breaker: closed}, false},
		{"disabled", api.EndpointStatus{Breaker: closed, Disabled: true}, true},
		{"held", api.EndpointStatus{Breaker: closed, HeldUntil: &now}, true},
		{"breaker open", api.EndpointStatus{Breaker: api.BreakerStatus{State: "open"}}, true},
		{"half open", api.EndpointStatus{Breaker: api.BreakerStatus{State: "half_open"}}, true},
		{"failing", api.EndpointStatus{Breaker: api.BreakerStatus{State: "closed", ConsecutiveFailures: 2}}, true},
		{"dead letters", api.EndpointStatus{Breaker: closed, DeadLetters: 1}, true},
		{"waiting", api.EndpointStatus{Breaker: closed, Pending: 3}, true},
	}
	for _, tt := range tests {
		if got := NeedsAttention(tt.e); got != tt.want {
			t.Errorf("%s: NeedsAttention = %v, want %v", tt.name, got, tt.want)
		}
	}
}

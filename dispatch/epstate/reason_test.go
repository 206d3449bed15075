package epstate

import "testing"

// A breaker transition's reason says why from the state it left.
func TestBreakerReason(t *testing.T) {
	for _, tt := range []struct{ kind, from, want string }{
		{"endpoint.opened", "closed", "failures"},
		{"endpoint.opened", "half_open", "probe_failed"},
		{"endpoint.closed", "half_open", "probe_succeeded"},
		{"endpoint.closed", "open", "reset"},
		{"endpoint.half_opened", "open", ""},
	} {
		if got := breakerReason(tt.kind, tt.from); got != tt.want {
			t.Errorf("breakerReason(%q, %q) = %q, want %q", tt.kind, tt.from, got, tt.want)
		}
	}
}

package breaker

import "time"

// Defaults used for zero Settings fields; they match the documented
// configuration defaults.
const (
	DefaultFailureThreshold = 10
	DefaultCooldown         = 5 * time.Minute
	DefaultMaxCooldown      = time.Hour
	DefaultSlowP95          = 5 * time.Second
)

// minSlowSamples is how many samples the window needs before its p95 can
// mark an endpoint as slow.
const minSlowSamples = 20

// Settings configures one endpoint's breaker.
type Settings struct {
	// FailureThreshold is how many consecutive failures open a closed
	// breaker. Zero or negative means DefaultFailureThreshold.
	FailureThreshold int

	// Cooldown is how long the breaker first stays open. Zero or negative
	// means DefaultCooldown.
	Cooldown time.Duration

	// MaxCooldown caps the cooldown as failed probes double it. Zero or
	// negative means DefaultMaxCooldown; a value below Cooldown means
	// Cooldown (no doubling).
	MaxCooldown time.Duration

	// SlowP95 is the p95 latency above which the endpoint counts as slow and
	// opens after half of FailureThreshold. Zero means DefaultSlowP95;
	// negative disables slow-endpoint detection.
	SlowP95 time.Duration
}

// withDefaults returns s with zero fields replaced by the defaults.
func (s Settings) withDefaults() Settings {
	if s.FailureThreshold <= 0 {
		s.FailureThreshold = DefaultFailureThreshold
	}
	if s.Cooldown <= 0 {
		s.Cooldown = DefaultCooldown
	}
	if s.MaxCooldown <= 0 {
		s.MaxCooldown = DefaultMaxCooldown
	}
	if s.MaxCooldown < s.Cooldown {
		s.MaxCooldown = s.Cooldown
	}
	if s.SlowP95 == 0 {
		s.SlowP95 = DefaultSlowP95
	}
	return s
}

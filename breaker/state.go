package breaker

import (
	"strconv"
	"time"
)

// State is a breaker's state. Its values are the ones the
// hookjet_breaker_state gauge reports.
type State int

// Breaker states.
const (
	// Closed lets every request through.
	Closed State = 0
	// HalfOpen lets one probe through after the cooldown.
	HalfOpen State = 1
	// Open refuses requests until the cooldown has passed.
	Open State = 2

	numStates = 3
)

// String returns "closed", "half_open" or "open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case HalfOpen:
		return "half_open"
	case Open:
		return "open"
	}
	return "State(" + strconv.Itoa(int(s)) + ")"
}

// Result is what a request that Acquire allowed came to.
type Result int

// Request results.
const (
	// Success is a 2xx response. It resets the consecutive failures and
	// closes a half-open breaker.
	Success Result = iota
	// Failure is a transient failure (timeout, connection error, 5xx). It
	// counts toward the threshold and re-opens a half-open breaker.
	Failure
	// Neutral means the endpoint answered without a 2xx that the breaker
	// should not hold against it (4xx, 429): it resets the consecutive
	// failures and closes a half-open breaker, but is not a success.
	Neutral
)

// String returns "success", "failure" or "neutral".
func (r Result) String() string {
	switch r {
	case Success:
		return "success"
	case Failure:
		return "failure"
	case Neutral:
		return "neutral"
	}
	return "Result(" + strconv.Itoa(int(r)) + ")"
}

// Transition reports a breaker's change of state.
type Transition struct {
	// Endpoint is the endpoint id.
	Endpoint string
	// From and To are the states before and after.
	From, To State
	// Cooldown is the cooldown in force after the transition: how long an
	// Open breaker stays open, or the base cooldown once Closed.
	Cooldown time.Duration
	// At is when the transition happened, by the registry's clock.
	At time.Time
}

// Health is a snapshot of one endpoint's breaker and statistics.
type Health struct {
	// State is the breaker state as last changed by Acquire or Record: an
	// open breaker whose cooldown has passed reads Open until the next
	// Acquire moves it to HalfOpen.
	State State
	// ConsecutiveFailures is the current run of failures.
	ConsecutiveFailures int
	// Cooldown is the current cooldown: the open period of an Open or
	// HalfOpen breaker, the base cooldown of a Closed one.
	Cooldown time.Duration
	// OpenedAt and OpenUntil are when the breaker last opened and when its
	// cooldown ends; both are zero while Closed.
	OpenedAt, OpenUntil time.Time

	// P50, P95 and P99 are latency percentiles over the rolling 24h window
	// (zero without samples), with about 7% relative error; latencies
	// below 100µs read as 100µs and above 120s as 120s.
	P50, P95, P99 time.Duration
	// Samples is how many results the window holds.
	Samples int64

	// FirstAttempts is how many first attempts the window holds.
	FirstAttempts int64
	// FirstAttemptSuccessRate is the fraction of those first attempts that
	// were a Success, in [0, 1]; it is 0 when FirstAttempts is 0.
	FirstAttemptSuccessRate float64

	// LastSuccess and LastFailure are when the last Success and Failure
	// were recorded; zero when there was none.
	LastSuccess, LastFailure time.Time
}

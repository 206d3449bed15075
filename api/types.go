package api

import (
	"maps"
	"slices"
	"time"

	"github.com/hookjet/hookjet/attempt"
)

// The JSON the admin API answers with. The delivery engine fills them in,
// the admin package serves them and the commands and the console read them;
// their shape is part of the user contract (docs/api.md).

// Summary is the answer of GET /api/v1/summary.
type Summary struct {
	Pending                 uint64  `json:"pending"`
	AwaitingRetry           uint64  `json:"awaiting_retry"`
	InFlight                int64   `json:"in_flight"`
	DeadLetter              uint64  `json:"dead_letter"`
	DeliveredLastHour       int64   `json:"delivered_last_hour"`
	FailedLastHour          int64   `json:"failed_last_hour"`
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	Endpoints               int     `json:"endpoints"`
	DisabledEndpoints       int     `json:"disabled_endpoints"`
	OpenBreakers            int     `json:"open_breakers"`
	EventsStored            uint64  `json:"events_stored"`
	EventsBytes             uint64  `json:"events_bytes"`
	// LogOldest is when the oldest event still in HOOKJET_EVENTS was
	// published: redelivery reaches back that far. Absent when it is empty.
	LogOldest *time.Time `json:"log_oldest,omitempty"`
	// OutboxLagSeconds is the age of the oldest outbox row, when an outbox
	// relay runs in this process (outbox.dsn set).
	OutboxLagSeconds *float64 `json:"outbox_lag_seconds,omitempty"`
	// Inbound counts the inbound gateway's requests since this process
	// started, by source id, when the gateway runs here (inbound.listen set).
	Inbound map[string]InboundCounts `json:"inbound,omitempty"`
	// Errors lists the lookups that failed; the other fields are still
	// filled in.
	Errors []string `json:"errors,omitempty"`
	// Waiting lists why deliveries wait, per endpoint that cannot take
	// them now (at most MaxWaiting, by endpoint id); WaitingEndpoints
	// counts them all.
	Waiting          []Wait `json:"waiting,omitempty"`
	WaitingEndpoints int    `json:"waiting_endpoints"`
}

// MaxWaiting bounds the endpoints Summary.Waiting lists.
const MaxWaiting = 100

// Wait reasons: why an endpoint's deliveries wait.
const (
	WaitDisabled     = "disabled"       // until an operator enables it
	WaitBreakerOpen  = "breaker_open"   // until the cooldown ends, then one probe
	WaitHalfOpen     = "breaker_probe"  // half-open: one probe request at a time
	WaitHeld         = "held"           // a receiver's Retry-After, for every process
	WaitRateLimited  = "rate_limited"   // rate_limit.rps: the next token
	WaitInFlightFull = "in_flight_full" // max_in_flight requests are out
	// WaitTaken: a process took them and had not settled them when this
	// one started (it stopped uncleanly, or still delivers them); NATS
	// gives them back by Until.
	WaitTaken = "taken"
	// WaitKeysHeld: ordering keys (ordering: key) wait behind an earlier
	// delivery of their own key: retrying, dead-lettered with
	// ordering_on_dead_letter: hold, or held by one of the reasons above.
	// The endpoint's other keys go.
	WaitKeysHeld = "keys_held"
	// WaitRetryScheduled: failed deliveries wait for their retry's due
	// time (retry.base, retry.cap; Until when this process knows it).
	WaitRetryScheduled = "retry_scheduled"
)

// Wait is one reason why deliveries to an endpoint wait, and until when.
type Wait struct {
	Endpoint string `json:"endpoint,omitempty"`
	// Reason is one of the Wait* constants.
	Reason string `json:"reason"`
	// Until is when the reason ends by itself; nil when it does not (a
	// disabled endpoint) or cannot be told (a probe out).
	Until *time.Time `json:"until,omitempty"`
	// Detail says more: the disabled reason, the hold's cause.
	Detail string `json:"detail,omitempty"`
}

// InboundCounts are one inbound source's requests since the process
// started: accepted, duplicates (answered 2xx, not stored again), signature
// failures (missing or invalid), window rejections (signed timestamp
// outside the tolerance), bodies too large and events that could not be
// stored (answered 503).
type InboundCounts struct {
	Accepted          int64 `json:"accepted"`
	Duplicates        int64 `json:"duplicates"`
	SignatureFailures int64 `json:"signature_failures"`
	WindowRejections  int64 `json:"window_rejections"`
	TooLarge          int64 `json:"too_large"`
	Unavailable       int64 `json:"unavailable"`
}

// BreakerStatus is an endpoint's circuit breaker as the admin API shows it.
type BreakerStatus struct {
	State               string     `json:"state"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	CooldownSeconds     float64    `json:"cooldown_seconds"`
	OpenedAt            *time.Time `json:"opened_at"`
	OpenUntil           *time.Time `json:"open_until,omitempty"`
}

// Latency holds rolling 24h percentiles in milliseconds.
type Latency struct {
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	Samples int64   `json:"samples"`
}

// EndpointStatus is one endpoint as the admin API shows it. Secrets and header
// values are never part of it; header names are.
type EndpointStatus struct {
	ID                      string        `json:"id"`
	URL                     string        `json:"url"`
	Events                  []string      `json:"events"`
	Disabled                bool          `json:"disabled"`
	DisabledReason          string        `json:"disabled_reason,omitempty"`
	Breaker                 BreakerStatus `json:"breaker"`
	LatencyMS               Latency       `json:"latency_ms"`
	FirstAttemptSuccessRate float64       `json:"first_attempt_success_rate"`
	Pending                 uint64        `json:"pending"`
	AwaitingRetry           uint64        `json:"awaiting_retry"`
	InFlight                int           `json:"in_flight"`
	HeldUntil               *time.Time    `json:"held_until,omitempty"`
	DeadLetters             uint64        `json:"dead_letters"`
	ConsecutiveFailures     int           `json:"consecutive_failures"`
	LastSuccess             *time.Time    `json:"last_success,omitempty"`
	LastFailure             *time.Time    `json:"last_failure,omitempty"`
	HeaderNames             []string      `json:"header_names,omitempty"`
	Secrets                 int           `json:"secrets"`
	LastDelivery            *LastDelivery `json:"last_delivery,omitempty"`
	Source                  string        `json:"source"`
	Tenant                  string        `json:"tenant"`
	Description             string        `json:"description"`
	CreatedAt               *time.Time    `json:"created_at"`
	UpdatedAt               *time.Time    `json:"updated_at"`
	// Waiting says why deliveries to the endpoint wait now, and until
	// when; empty when they go at once.
	Waiting []Wait `json:"waiting,omitempty"`
	// NextRetry is when the earliest retry this process stored for the
	// endpoint is due (the retry_at of its log line); nil when none is.
	NextRetry *time.Time `json:"next_retry,omitempty"`
	// Owner, LastTest and Settings: api/settings.go.
	Owner    string    `json:"owner"`
	LastTest *LastTest `json:"last_test"`
	// Filter is the endpoint's CEL filter and Transform its JavaScript
	// transform, as written; empty when it has none.
	Filter    string            `json:"filter,omitempty"`
	Transform string            `json:"transform,omitempty"`
	Settings  *EndpointSettings `json:"settings,omitempty"`
	// HeldKeys are the ordering keys that wait on an earlier delivery of
	// their own key (api/ordering.go); nil when none does or the endpoint
	// is not ordered.
	HeldKeys *HeldKeys `json:"held_keys,omitempty"`
}

// LastDelivery is an endpoint's last successful delivery from this process.
// The type lives in package attempt, below both the engine and this API.
type LastDelivery = attempt.LastDelivery

// ReplayRequest selects dead letters to send again.
type ReplayRequest struct {
	Endpoint string   `json:"endpoint"`
	Since    string   `json:"since"`
	Until    string   `json:"until"`
	IDs      []string `json:"ids"`
	DryRun   bool     `json:"dry_run"`
}

// ReplayResult reports a replay.
type ReplayResult struct {
	Matched  int      `json:"matched"`
	Replayed int      `json:"replayed"`
	Skipped  int      `json:"skipped,omitempty"`
	Errors   []string `json:"errors,omitempty"`
	// Waiting lists, for the endpoints replayed to, why their deliveries
	// wait instead of going now (a disabled endpoint, an open breaker, a
	// hold); Warnings says the same in words.
	Waiting  []Wait   `json:"waiting,omitempty"`
	Warnings []string `json:"warnings,omitempty"`

	targets map[string]bool // endpoints replayed to
}

// Targets are the endpoints replayed to, in id order.
func (r *ReplayResult) Targets() []string {
	return slices.Sorted(maps.Keys(r.targets))
}

// ReplayedTo counts one dead letter replayed to endpoint.
func (r *ReplayResult) ReplayedTo(endpoint string) {
	r.Replayed++
	if r.targets == nil {
		r.targets = map[string]bool{}
	}
	r.targets[endpoint] = true
}

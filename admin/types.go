package admin

import (
	"time"

	"github.com/hookjet/hookjet/attempt"
)

// The JSON the admin API answers with. The delivery engine fills them in;
// the admin package owns their shape, which is part of the user contract
// (shared/DESIGN.md, "Admin API").

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
	// OutboxLagSeconds is the age of the oldest outbox row, when an outbox
	// relay runs in this process (outbox.dsn set).
	OutboxLagSeconds *float64 `json:"outbox_lag_seconds,omitempty"`
	// Errors lists the lookups that failed; the other fields are still
	// filled in.
	Errors []string `json:"errors,omitempty"`
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
	// Owner, LastTest and Settings: admin/settings.go.
	Owner    string            `json:"owner"`
	LastTest *LastTest         `json:"last_test"`
	Settings *EndpointSettings `json:"settings,omitempty"`
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
}

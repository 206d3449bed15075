package api

import "time"

// DLQEntry is one dead letter as the admin API lists it. The payload is not
// part of it; `nats stream get HOOKJET_DLQ <seq>` shows it.
type DLQEntry struct {
	Seq          uint64 `json:"seq"`
	EventID      string `json:"event_id"`
	EventType    string `json:"event_type"`
	Endpoint     string `json:"endpoint"`
	Reason       string `json:"reason"`
	Attempts     int    `json:"attempts"`
	LastStatus   int    `json:"last_status"` // the last HTTP status; 0 when there was no response
	LastError    string `json:"last_error"`
	FirstAttempt string `json:"first_attempt"`
	LastAttempt  string `json:"last_attempt"`
	StoredAt     string `json:"stored_at"`
	Bytes        int    `json:"bytes"`
	// LastResponse is the start of the last non-2xx response body, from
	// the delivery log (filled in by the admin API when the log holds it).
	LastResponse string `json:"last_response,omitempty"`
	// Tenant is the event's tenant (Hookjet-Tenant); empty when it named
	// none.
	Tenant string `json:"tenant,omitempty"`
	// EndpointCreatedAt is the incarnation of the endpoint the dead letter
	// was stored for (its created_at, RFC 3339 UTC); empty for a
	// config-file endpoint and for dead letters stored before hookjet kept
	// it.
	EndpointCreatedAt string `json:"endpoint_created_at,omitempty"`
	// Incarnation is EndpointCreatedAt as stored (Unix nanoseconds), for
	// comparing with the endpoint in force; "" when absent.
	Incarnation string `json:"-"`
	// Stored is StoredAt as a time.
	Stored time.Time `json:"-"`
}

// DLQFilter selects dead letters. Zero fields match everything.
type DLQFilter struct {
	Endpoint string
	Since    time.Time // stored at or after
	Until    time.Time // stored before
	IDs      []string  // event ids
	Limit    int       // 0: no limit
	// Deleted asks for the dead letters of endpoints deleted since (of an
	// earlier incarnation of the id, or of no endpoint in force) instead of
	// those of the endpoints in force. The engine turns it into Keep.
	Deleted bool
	// Keep, when not nil, is a last test every listed or counted entry
	// passes: the engine's "belongs to the endpoint in force".
	Keep func(DLQEntry) bool
}

// DLQStat summarises one endpoint's dead letters.
type DLQStat struct {
	Endpoint         string  `json:"endpoint"`
	Count            int     `json:"count"`
	MostCommonReason string  `json:"most_common_reason"`
	MostCommonError  string  `json:"most_common_error"`
	MostCommonStatus int     `json:"most_common_status"` // an HTTP status; 0: no response
	First            string  `json:"first"`
	Last             string  `json:"last"`
	AverageAttempts  float64 `json:"average_attempts"`
}

// DiscardRequest selects dead letters to discard: those of an endpoint,
// with these event ids, stored in [since, until). At least one is needed.
type DiscardRequest struct {
	Endpoint string   `json:"endpoint"`
	IDs      []string `json:"ids"`
	Since    string   `json:"since"`
	Until    string   `json:"until"`
	DryRun   bool     `json:"dry_run"`
}

// DiscardResult reports a discard: dead letters matched, and deleted
// (0 for a dry run).
type DiscardResult struct {
	Matched   int  `json:"matched"`
	Discarded int  `json:"discarded"`
	DryRun    bool `json:"dry_run,omitempty"`
}

package api

import "encoding/json"

// The answers (and a few requests) of the admin API's routes that are not
// one of the types above; the OpenAPI document (openapi.json) names each
// route's.

// EndpointPage is the answer of GET /api/v1/endpoints.
type EndpointPage struct {
	Endpoints []EndpointStatus `json:"endpoints"`
	// Next is the after cursor of the next page; empty after the last.
	Next string `json:"next"`
}

// CreatedEndpoint is the answer of POST /api/v1/endpoints: the endpoint
// and, when the request gave no secrets, the signing secret it was given,
// shown only in this answer.
type CreatedEndpoint struct {
	EndpointStatus
	Secret string `json:"secret,omitempty"`
}

// DLQList is the answer of GET /api/v1/dlq.
type DLQList struct {
	Entries []DLQEntry `json:"entries"`
}

// DLQStats is the answer of GET /api/v1/dlq/stats.
type DLQStats struct {
	Endpoints []DLQStat `json:"endpoints"`
}

// RedeliverRequest is the body of POST /api/v1/endpoints/{id}/redeliver:
// the stored events of [since, until) again (RFC 3339 times or durations
// ago; until empty: up to now).
type RedeliverRequest struct {
	Since  string `json:"since"`
	Until  string `json:"until,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
}

// RedeliverResult is its answer: events matched, and queued (0 for a dry
// run).
type RedeliverResult struct {
	Matched int `json:"matched"`
	Queued  int `json:"queued"`
}

// TestRequest is the optional body of POST /api/v1/endpoints/{id}/test:
// the test event's type and payload (an example of the catalogue, say).
// Empty, the test is a hookjet.test event.
type TestRequest struct {
	// Type is the test event's type; empty means hookjet.test.
	Type string `json:"type,omitempty"`
	// Data is its payload, any JSON value; only with Type.
	Data json.RawMessage `json:"data,omitempty"`
}

// TestResult is the answer of POST /api/v1/endpoints/{id}/test: the id of
// the test event sent.
type TestResult struct {
	EventID string `json:"event_id"`
}

// PortalSessionRequest is the body of POST /api/v1/portal/sessions.
type PortalSessionRequest struct {
	Tenant string `json:"tenant"`
	// TTL is a Go duration; empty: 1h, at most 168h.
	TTL      string `json:"ttl,omitempty"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// PortalSession is its answer: the portal link and when it expires.
type PortalSession struct {
	URL       string `json:"url"`
	ExpiresAt string `json:"expires_at"`
	Tenant    string `json:"tenant"`
	ReadOnly  bool   `json:"read_only"`
}

package api

import "encoding/json"

// CodeTest is the body of POST /api/v1/endpoints/{id}/filter/test and
// /transform/test: the event to try, by EventID (an event the event log
// holds) or inline (Event), and optionally a candidate Filter or Transform
// tried instead of the endpoint's own.
type CodeTest struct {
	// EventID names a stored event; for an endpoint with a tenant, only
	// that tenant's events are found.
	EventID string `json:"event_id,omitempty"`
	// Event is an inline event, used when EventID is empty.
	Event *TestEvent `json:"event,omitempty"`
	// Filter, when set, is tried instead of the endpoint's filter (filter
	// test only).
	Filter *string `json:"filter,omitempty"`
	// Transform, when set, is tried instead of the endpoint's transform
	// (transform test only).
	Transform *string `json:"transform,omitempty"`
}

// TestEvent is an inline event of a [CodeTest].
type TestEvent struct {
	// Type is the event type; required.
	Type string `json:"type"`
	// Data is the payload, any JSON value.
	Data json.RawMessage `json:"data,omitempty"`
	// ID, Tenant and Key are the event id, tenant and ordering key; ""
	// when absent.
	ID     string `json:"id,omitempty"`
	Tenant string `json:"tenant,omitempty"`
	Key    string `json:"key,omitempty"`
	// Headers are the publisher's message headers.
	Headers map[string]string `json:"headers,omitempty"`
}

// FilterTestResult answers a filter test: whether the endpoint would
// receive the event, and why not when its filter failed (a failure is no
// match). An endpoint without a filter matches every event.
type FilterTestResult struct {
	Match bool   `json:"match"`
	Error string `json:"error,omitempty"`
}

// TransformTestResult answers a transform test: the request the endpoint
// would be sent, or that the script cancelled the delivery, or the
// script's error (with its line:column), which would dead-letter the
// delivery with reason transform.
type TransformTestResult struct {
	Request *TestRequestShape `json:"request,omitempty"`
	Cancel  bool              `json:"cancel"`
	Error   string            `json:"error,omitempty"`
}

// TestRequestShape is the request a delivery would make: its URL, headers
// (secret values, the endpoint's configured header values and the
// signature, shown as "[redacted]") and body.
type TestRequestShape struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

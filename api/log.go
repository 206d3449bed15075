package api

import (
	"encoding/json"
	"time"

	"github.com/hookjet/hookjet/attempt"
)

// LogQuery selects delivery-log records for the admin API's attempt pages
// and exports (jetstream.LogReader reads them).
// Zero fields match everything.
type LogQuery struct {
	Endpoint string
	Since    time.Time // stored at or after
	Until    time.Time // stored before
	// Before is the paging cursor: only records with a smaller sequence.
	Before uint64
	// Limit is the page size; 0 means 100.
	Limit int
	// Match filters further (tenant, event type, class); nil matches all.
	Match func(*attempt.Record) bool
}

// Event is the answer of GET /api/v1/events/{id}.
type Event struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	PublishedAt *time.Time `json:"published_at"`
	Size        *int       `json:"size"`
	// Seq is its sequence in HOOKJET_EVENTS; Tenant and Key its tenant and
	// ordering key ("" when none); ContentType its Content-Type. All are
	// left out when the event log no longer holds it.
	Seq         uint64 `json:"seq,omitempty"`
	Tenant      string `json:"tenant"`
	Key         string `json:"key"`
	ContentType string `json:"content_type,omitempty"`
	// Data is the payload when it is JSON (and at most MaxPayloadShown
	// bytes); DataBase64 the payload, or its first MaxPayloadShown bytes,
	// otherwise. DataTruncated says the payload was longer than what is
	// shown; DataHidden that console.show_payloads is false.
	Data          json.RawMessage `json:"data,omitempty"`
	DataBase64    string          `json:"data_base64,omitempty"`
	DataTruncated bool            `json:"data_truncated,omitempty"`
	DataHidden    bool            `json:"data_hidden,omitempty"`
	Deliveries    []EventDelivery `json:"deliveries"`
}

// EventDelivery is one delivery of the event to one endpoint: its state
// and its records, oldest first. An endpoint has one for the event's first
// delivery and one more for each redelivery and replay, numbered in order.
type EventDelivery struct {
	Endpoint string `json:"endpoint"`
	// Delivery is the records' delivery (empty for records written before
	// deliveries were named).
	Delivery string `json:"delivery,omitempty"`
	// Number counts the endpoint's deliveries of the event, from 1.
	Number int `json:"number"`
	// Trigger says what started the delivery: delivery (the event's fan-out),
	// redeliver, replay or test.
	Trigger string `json:"trigger"`
	// State is delivered, pending, dead_letter, discarded, or
	// filtered_out (the endpoint's filter refuses the event: no delivery).
	State string `json:"state"`
	// Held says what holds a pending delivery: disabled (the endpoint is),
	// breaker_open (until HeldUntil) or retry_after (the receiver asked
	// to wait until HeldUntil); empty when nothing does.
	Held      string     `json:"held,omitempty"`
	HeldUntil *time.Time `json:"held_until,omitempty"`
	// Reason says in words why the event was not delivered (filtered out,
	// held); empty otherwise.
	Reason string `json:"reason,omitempty"`
	// Request is the request hookjet builds for the endpoint and event,
	// computed (the log keeps no request headers): header names with
	// secret values redacted. Nil for an endpoint no longer in force.
	Request  *BuiltRequest    `json:"request,omitempty"`
	Attempts []attempt.Record `json:"attempts"`
}

// BuiltRequest is the request (or broker message) hookjet builds for one
// endpoint and event.
type BuiltRequest struct {
	// Destination is the endpoint's destination type: webhook, nats,
	// kafka or rabbitmq.
	Destination string `json:"destination"`
	// Method and URL are a webhook's (the URL's password redacted).
	Method string `json:"method,omitempty"`
	URL    string `json:"url,omitempty"`
	// Headers are the headers sent; the values of secrets (signatures,
	// credentials, configured header values) read "[redacted]", and those
	// set at each attempt "[per attempt]".
	Headers map[string]string `json:"headers"`
}

// AttemptPage is the answer of the attempts routes.
type AttemptPage struct {
	Attempts []attempt.Record `json:"attempts"`
	Next     string           `json:"next"`
}

// ValidToken reports whether s can stand as one subject token, as an
// endpoint id in a query must: not empty, and without dots, wildcards or
// white space.
func ValidToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch c {
		case '.', '*', '>', ' ', '\t', '\r', '\n':
			return false
		}
	}
	return true
}

package api

import (
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
	ID          string          `json:"id"`
	Type        string          `json:"type"`
	PublishedAt *time.Time      `json:"published_at"`
	Size        *int            `json:"size"`
	Deliveries  []EventDelivery `json:"deliveries"`
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
	Trigger  string           `json:"trigger"`
	State    string           `json:"state"` // delivered, pending, dead_letter, discarded
	Attempts []attempt.Record `json:"attempts"`
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

package api

import "time"

// EventQuery selects stored events for GET /api/v1/events (the event
// log's list index answers it). Zero fields match everything.
type EventQuery struct {
	Type   string
	Tenant string
	// Prefix selects the events whose id starts with it.
	Prefix string
	// Since and Until select the events published at or after Since and
	// before Until.
	Since, Until time.Time
	// Cursor is the next cursor of a previous page: only events stored
	// before it (0: from the newest).
	Cursor uint64
	// Limit is the page size; 0 means 100.
	Limit int
}

// EventSummary is one event of GET /api/v1/events.
type EventSummary struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Tenant string `json:"tenant"` // "" when the event names none
	Key    string `json:"key"`    // its ordering key; "" when none
	// PublishedAt is when HOOKJET_EVENTS stored it.
	PublishedAt time.Time `json:"published_at"`
	// Size is the payload's size in bytes.
	Size int `json:"size"`
	// Seq is its sequence in HOOKJET_EVENTS.
	Seq uint64 `json:"seq"`
}

// EventPage is the answer of GET /api/v1/events: events newest first and
// the cursor of the next page ("" after the last).
type EventPage struct {
	Events []EventSummary `json:"events"`
	Next   string         `json:"next"`
}

// MaxPayloadShown is the most of an event's payload its view shows.
const MaxPayloadShown = 64 << 10

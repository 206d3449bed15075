package api

import "encoding/json"

// The publish API's body and answer (POST /api/v1/events); package publish
// serves them and package client sends them.

// PublishEvent is one event to publish: the body of POST /api/v1/events
// for one event, or an element of [PublishBatch]'s Events.
type PublishEvent struct {
	// ID is the event's id (Nats-Msg-Id, its webhook-id); empty: the
	// server generates one. Publishing an id again stores nothing (a
	// duplicate).
	ID string `json:"id,omitempty"`
	// Type is the event type, such as order.created: the rest of the
	// subject hookjet.events.<type>. Types starting with "hookjet." are
	// hookjet's own operational events: the server refuses them (400
	// naming type).
	Type string `json:"type"`
	// Data is the payload: any JSON value.
	Data json.RawMessage `json:"data"`
	// Tenant is the event's tenant (Hookjet-Tenant): only that tenant's
	// endpoints (and those without a tenant) receive it.
	Tenant string `json:"tenant,omitempty"`
	// Key is the ordering key (Hookjet-Ordering-Key): endpoints with
	// ordering: key receive the key's events in order.
	Key string `json:"key,omitempty"`
}

// PublishBatch is the body of POST /api/v1/events for up to 1,000 events.
type PublishBatch struct {
	Events []PublishEvent `json:"events"`
}

// PublishResult is the answer (202) of POST /api/v1/events: the events'
// ids, in the request's order (generated ones included), how many were
// duplicates (their id was stored before: not stored again) and which.
type PublishResult struct {
	IDs        []string `json:"ids"`
	Duplicates int      `json:"duplicates"`
	// DuplicateIDs are the ids of the events that were duplicates, once
	// per such event, in the request's order; empty when none was.
	DuplicateIDs []string `json:"duplicate_ids"`
	// Results says what became of each event, in the request's order.
	Results []PublishedEvent `json:"results"`
}

// PublishedEvent is what became of one event of a publish request.
type PublishedEvent struct {
	ID string `json:"id"`
	// Stream and Seq say where the event is stored; for a duplicate, where
	// the copy stored first is.
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	// Duplicate is set when the id was stored before (within the stream's
	// duplicate window, or remembered by hookjet's dedupe ledger past
	// it), or earlier in the same request: this copy was not stored.
	Duplicate bool `json:"duplicate"`
}

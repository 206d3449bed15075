package inbound

import (
	"context"
	"time"
)

// Store stores a verified event, once per provider id (package jetstream's
// InboundStore, over HOOKJET_INBOUND and the dedupe ledger). An error
// means the event may not be stored: the gateway answers 503 and the
// provider retries.
type Store interface {
	Store(ctx context.Context, ev Event) (Stored, error)
}

// Event is one verified webhook to store.
type Event struct {
	Source string // the source's id
	ID     string // the provider's event id (header-safe)
	// DedupeID is what the dedupe ledger recognises a copy by; empty
	// means ID. A source whose signature does not cover the id sets it to
	// the body's hash, so that a captured request resent under a new id is
	// still a duplicate; Nats-Msg-Id stays <source>:<ID>, which catches a
	// copy under the same id within the duplicate window.
	DedupeID string
	Type     string // the provider's event type, before sanitising
	// ContentType is the request's Content-Type; empty means
	// application/json.
	ContentType string
	ReceivedAt  time.Time
	Body        []byte
}

// Stored says where a stored event is.
type Stored struct {
	// Seq is the event's sequence in HOOKJET_INBOUND (for a duplicate, the
	// first copy's).
	Seq uint64
	// Duplicate means the event had been stored before (within the
	// duplicate window, or remembered in the dedupe ledger) and was not
	// stored again.
	Duplicate bool
}

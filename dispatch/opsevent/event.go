package opsevent

import "time"

// The types of hookjet's own events (config.IsOperational).
const (
	TypeDisabled      = "hookjet.endpoint.disabled"
	TypeEnabled       = "hookjet.endpoint.enabled"
	TypeBreakerOpened = "hookjet.endpoint.breaker_opened"
	TypeBreakerClosed = "hookjet.endpoint.breaker_closed"
	TypeDeadLetter    = "hookjet.dead_letter"
)

// Types returns the types of hookjet's own events, for the catalogue.
func Types() []string {
	return []string{TypeDisabled, TypeEnabled, TypeBreakerOpened, TypeBreakerClosed, TypeDeadLetter}
}

// Payload is the body of each of hookjet's own events.
type Payload struct {
	// Type is the event's type (TypeDisabled, ...).
	Type string `json:"type"`
	// Endpoint is the endpoint the event is about.
	Endpoint Endpoint `json:"endpoint"`
	// Tenant is the endpoint's tenant; "" when it has none.
	Tenant string `json:"tenant"`
	// Reason says why: disabled "gone" (it answered 410) or "operator";
	// enabled "operator"; breaker_opened "failures" or "probe_failed";
	// breaker_closed "probe_succeeded" or "reset"; dead_letter the reason
	// of the minute's last dead letter (permanent, exhausted, expired,
	// gone, rejected, overflow, transform, auth, invalid).
	Reason string `json:"reason"`
	// Count is how many dead letters the minute had (hookjet.dead_letter);
	// 1 for the other types.
	Count int `json:"count"`
	// At is when it happened (UTC); for hookjet.dead_letter the start of
	// the minute the count covers.
	At time.Time `json:"at"`
}

// Endpoint names the endpoint an event is about.
type Endpoint struct {
	ID          string `json:"id"`
	Description string `json:"description"`
}

// Subject is the endpoint an event is about, as the engine knows it.
type Subject struct {
	ID, Description, Tenant string
}

// typeOf is the type of the operational event published on
// hookjet.ops.<kind>, or "" for a kind that has none (half_opened, reset).
func typeOf(kind string) string {
	switch kind {
	case "endpoint.disabled":
		return TypeDisabled
	case "endpoint.enabled":
		return TypeEnabled
	case "endpoint.opened":
		return TypeBreakerOpened
	case "endpoint.closed":
		return TypeBreakerClosed
	case "dead_letter":
		return TypeDeadLetter
	}
	return ""
}

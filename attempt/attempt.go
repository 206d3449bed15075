package attempt

import (
	"fmt"
	"time"
)

// Triggers: what made hookjet attempt a delivery.
const (
	TriggerDelivery  = "delivery"  // the first attempt, from the fan-out
	TriggerRetry     = "retry"     // a scheduled retry after a failed attempt
	TriggerDrain     = "drain"     // a parked delivery taken by its endpoint's drain
	TriggerReplay    = "replay"    // a dead letter replayed
	TriggerRedeliver = "redeliver" // history sent again (POST .../redeliver)
	TriggerTest      = "test"      // a hookjet.test event (POST .../test)
)

// Classes of a record: the outcome classes of an attempt (those of package
// deliver, by name), and the three classes of records that are not HTTP
// attempts.
const (
	ClassSuccess     = "success"
	ClassTransient   = "transient"
	ClassRateLimited = "rate_limited"
	ClassPermanent   = "permanent"
	ClassGone        = "gone"
	ClassRejected    = "rejected"
	ClassAuth        = "auth"        // the endpoint's OAuth2 token endpoint refused; nothing was sent
	ClassDeadLetter  = "dead_letter" // moved to HOOKJET_DLQ; Reason says why
	ClassParked      = "parked"      // waiting as a task; Reason says for what
	ClassExpired     = "expired"     // past retry.max_age; dead-lettered
	ClassDiscarded   = "discarded"   // a dead letter an operator discarded
	ClassCancelled   = "cancelled"   // the endpoint's transform cancelled it; nothing was sent
)

// Classes lists every class a record may have.
var Classes = []string{
	ClassSuccess, ClassTransient, ClassRateLimited, ClassPermanent, ClassGone, ClassRejected, ClassAuth,
	ClassDeadLetter, ClassParked, ClassExpired, ClassDiscarded, ClassCancelled,
}

// Terminal reports whether class c ends a delivery: delivered, or moved to
// the dead-letter queue.
func Terminal(c string) bool {
	return c == ClassSuccess || c == ClassDeadLetter || c == ClassExpired || c == ClassCancelled
}

// ValidClass reports whether c is one of [Classes].
func ValidClass(c string) bool {
	for _, k := range Classes {
		if c == k {
			return true
		}
	}
	return false
}

// Record is one entry of the delivery log. It never holds request headers,
// secrets or the payload (the event log holds that); Response is the start
// of a non-2xx response body.
type Record struct {
	EventID   string `json:"event_id"`
	EventType string `json:"event_type"`
	Endpoint  string `json:"endpoint"`
	Tenant    string `json:"tenant"`
	// EndpointCreatedAt is the incarnation of the endpoint: its created_at
	// (RFC 3339 UTC, nanoseconds); empty for a config-file endpoint. An
	// endpoint deleted and created again with the same id has another.
	EndpointCreatedAt string `json:"endpoint_created_at,omitempty"`
	// Attempt is the attempt's number, from 1; for a dead_letter, parked or
	// expired record the number of attempts made so far.
	Attempt int    `json:"attempt"`
	Trigger string `json:"trigger"`
	// Delivery names the delivery of the event to the endpoint that the
	// record belongs to: the same on every record of one delivery (its
	// attempts, parkings and dead letter), another for each redelivery,
	// replay or test of it, so an event's records can be told apart by
	// delivery. It is one subject token, opaque to readers; empty on
	// records written before it existed.
	Delivery string `json:"delivery,omitempty"`
	// StartedAt is when the attempt started (or the record was made), UTC.
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
	// Status is the HTTP status; 0 when there was no response.
	Status int    `json:"status"`
	Class  string `json:"class"`
	// Reason is why a delivery was dead-lettered (permanent, exhausted,
	// expired, gone, rejected, overflow) or parked (breaker, in_flight,
	// rate_limit, disabled, slow...); empty for attempts.
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error"`
	// Response is the first log.response_bytes of a non-2xx response body.
	Response string `json:"response,omitempty"`
	// Seq is the record's position in the log (HOOKJET_LOG's stream
	// sequence), filled in when read; it is the paging cursor.
	Seq uint64 `json:"seq,omitempty"`
}

// Validate reports the first field that a stored record must have.
func (r *Record) Validate() error {
	switch {
	case r.EventID == "":
		return fmt.Errorf("attempt record: event_id is empty")
	case r.Endpoint == "":
		return fmt.Errorf("attempt record: endpoint is empty")
	case !ValidClass(r.Class):
		return fmt.Errorf("attempt record: class %q is unknown", r.Class)
	}
	return nil
}

// LastDelivery is an endpoint's last successful delivery from this
// process, as the endpoint object shows it.
type LastDelivery struct {
	EventID   string    `json:"event_id"`
	Status    int       `json:"status"`
	LatencyMS float64   `json:"latency_ms"`
	At        time.Time `json:"at"`
}

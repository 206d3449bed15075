package settle

import (
	"fmt"
	"time"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/destination"
)

// Verb is what happens to a delivery after an attempt.
type Verb int

const (
	Ack        Verb = iota // delivered: record it and settle
	Retry                  // schedule another attempt after Wait
	DeadLetter             // copy to HOOKJET_DLQ with Reason and settle
)

func (v Verb) String() string {
	switch v {
	case Ack:
		return "ack"
	case Retry:
		return "retry"
	case DeadLetter:
		return "dead_letter"
	}
	return fmt.Sprintf("Verb(%d)", int(v))
}

// Action is the decision of [Decide].
type Action struct {
	Verb   Verb
	Wait   time.Duration // Retry: until the next attempt
	Reason string        // DeadLetter: permanent, exhausted, expired, gone, rejected, auth
	// Hold pauses the whole endpoint until now+Wait (429, 503 with
	// Retry-After): every process stops sending to it meanwhile.
	Hold bool
	// Disable turns the endpoint off for every process (410).
	Disable bool
}

// Decide maps one attempt's result to what happens next. st already counts
// this attempt; published is when the event was published (retry.max_age
// counts from there). jitter draws the full-jitter delay for an attempt
// number; it is a parameter so that Decide stays a pure function.
func Decide(st State, res *destination.Result, s config.Settings, published, now time.Time, jitter func(attempt int) time.Duration) Action {
	switch res.Class {
	case destination.Success:
		return Action{Verb: Ack}
	case destination.Gone:
		return Action{Verb: DeadLetter, Reason: "gone", Disable: true}
	case destination.Rejected:
		return Action{Verb: DeadLetter, Reason: "rejected"}
	case destination.Auth:
		return Action{Verb: DeadLetter, Reason: "auth"}
	case destination.Transient:
		return retryOrGiveUp(st, s, published, now, jitter(st.Attempts), false)
	case destination.RateLimited:
		return retryOrGiveUp(st, s, published, now, backoff.RateLimit(res.RetryAfter, s.Retry.Cap, nil), true)
	default:
		return Action{Verb: DeadLetter, Reason: "permanent"}
	}
}

func retryOrGiveUp(st State, s config.Settings, published, now time.Time, wait time.Duration, hold bool) Action {
	if st.Attempts >= s.Retry.MaxAttempts {
		return Action{Verb: DeadLetter, Reason: "exhausted"}
	}
	if now.Add(wait).Sub(published) > s.Retry.MaxAge {
		return Action{Verb: DeadLetter, Reason: "expired"}
	}
	return Action{Verb: Retry, Wait: wait, Hold: hold}
}

// Precheck refuses a delivery before any request: a payload over the limit
// (rejected) or an event past retry.max_age (expired). ok is true when the
// delivery may be attempted.
func Precheck(size, maxPayload int, s config.Settings, published, now time.Time) (reason, why string, ok bool) {
	if maxPayload > 0 && size > maxPayload {
		return "rejected", fmt.Sprintf("payload of %d bytes exceeds security.max_payload_bytes (%d)", size, maxPayload), false
	}
	if now.Sub(published) > s.Retry.MaxAge {
		return "expired", fmt.Sprintf("not delivered within retry.max_age (%s)", s.Retry.MaxAge), false
	}
	return "", "", true
}

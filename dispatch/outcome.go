package dispatch

import (
	"fmt"
	"time"

	"github.com/hookjet/hookjet/backoff"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/destination"
)

// verb is what happens to a delivery after an attempt.
type verb int

const (
	actAck        verb = iota // delivered: record it and settle
	actRetry                  // schedule another attempt after Wait
	actDeadLetter             // copy to HOOKJET_DLQ with Reason and settle
)

// action is the decision of [decide].
type action struct {
	Verb   verb
	Wait   time.Duration // actRetry: until the next attempt
	Reason string        // actDeadLetter: permanent, exhausted, expired, gone, rejected
	// Hold pauses the whole endpoint until now+Wait (429, 503 with
	// Retry-After): every process stops sending to it meanwhile.
	Hold bool
	// Disable turns the endpoint off for every process (410).
	Disable bool
}

// decide maps one attempt's result to what happens next. st already counts
// this attempt; published is when the event was published (retry.max_age
// counts from there). jitter draws the full-jitter delay for an attempt
// number; it is a parameter so that decide stays a pure function.
func decide(st attemptState, res *destination.Result, s config.Settings, published, now time.Time, jitter func(attempt int) time.Duration) action {
	switch res.Class {
	case destination.Success:
		return action{Verb: actAck}
	case destination.Gone:
		return action{Verb: actDeadLetter, Reason: "gone", Disable: true}
	case destination.Rejected:
		return action{Verb: actDeadLetter, Reason: "rejected"}
	case destination.Auth:
		return action{Verb: actDeadLetter, Reason: "auth"}
	case destination.Transient:
		return retryOrGiveUp(st, s, published, now, jitter(st.Attempts), false)
	case destination.RateLimited:
		return retryOrGiveUp(st, s, published, now, backoff.RateLimit(res.RetryAfter, s.Retry.Cap, nil), true)
	default:
		return action{Verb: actDeadLetter, Reason: "permanent"}
	}
}

func retryOrGiveUp(st attemptState, s config.Settings, published, now time.Time, wait time.Duration, hold bool) action {
	if st.Attempts >= s.Retry.MaxAttempts {
		return action{Verb: actDeadLetter, Reason: "exhausted"}
	}
	if now.Add(wait).Sub(published) > s.Retry.MaxAge {
		return action{Verb: actDeadLetter, Reason: "expired"}
	}
	return action{Verb: actRetry, Wait: wait, Hold: hold}
}

// precheck refuses a delivery before any request: a payload over the limit
// (rejected) or an event past retry.max_age (expired). ok is true when the
// delivery may be attempted.
func precheck(size, maxPayload int, s config.Settings, published, now time.Time) (reason, why string, ok bool) {
	if maxPayload > 0 && size > maxPayload {
		return "rejected", fmt.Sprintf("payload of %d bytes exceeds security.max_payload_bytes (%d)", size, maxPayload), false
	}
	if now.Sub(published) > s.Retry.MaxAge {
		return "expired", fmt.Sprintf("not delivered within retry.max_age (%s)", s.Retry.MaxAge), false
	}
	return "", "", true
}

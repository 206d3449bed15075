package api

import (
	"fmt"
	"strings"
	"time"
)

// "Why do deliveries to this endpoint wait?" is answered here, once: the
// engine gathers the facts (WaitFacts), Waits turns them into the reasons
// the admin API shows in an endpoint's and the summary's "waiting", and
// every other room only renders that list: Describe (operators' words: the
// CLI, replay warnings), Brief (the CLI's WAITING column) and the portal's
// customer words (package console).

// WaitFacts is what the engine knows about one endpoint at one moment.
// Zero values mean "not so".
type WaitFacts struct {
	Disabled       bool
	DisabledReason string
	// HoldUntil and HoldCause: a receiver's Retry-After hold.
	HoldUntil time.Time
	HoldCause string
	// BreakerOpen until BreakerOpenUntil after ConsecutiveFailures, or
	// BreakerHalfOpen: one probe request at a time.
	BreakerOpen         bool
	BreakerHalfOpen     bool
	BreakerOpenUntil    time.Time
	ConsecutiveFailures int
	// RateLimit is rate_limit.rps (0: none) and Tokens the limiter's
	// tokens at that moment.
	RateLimit float64
	Tokens    float64
	// MaxInFlight is max_in_flight and InFlight the requests out now.
	MaxInFlight, InFlight int
	// Taken deliveries were taken by a process that has not settled them;
	// NATS gives them back by TakenUntil.
	Taken      int
	TakenUntil time.Time
	// Retries wait for their due time, the earliest at NextRetry (zero:
	// not known, such as those stored before this process started).
	Retries   uint64
	NextRetry time.Time
	// HeldKeys are the endpoint's ordering keys held behind an earlier
	// delivery of their own (ordering: key); nil when none is.
	HeldKeys *HeldKeys
}

// Waits says why deliveries to endpoint wait at now, and until when, from
// f; nil when they go at once. The order is fixed: disabled, held, the
// breaker, the rate limit, the in-flight cap, taken, held ordering keys,
// retries.
func Waits(endpoint string, f WaitFacts, now time.Time) []Wait {
	var out []Wait
	add := func(reason string, until time.Time, detail string) {
		out = append(out, Wait{Endpoint: endpoint, Reason: reason, Until: utcPtr(until), Detail: detail})
	}
	if f.Disabled {
		add(WaitDisabled, time.Time{}, f.DisabledReason)
	}
	if f.HoldUntil.After(now) {
		add(WaitHeld, f.HoldUntil, f.HoldCause)
	}
	switch {
	case f.BreakerOpen:
		add(WaitBreakerOpen, f.BreakerOpenUntil, fmt.Sprintf("%d consecutive failures; then one probe request", f.ConsecutiveFailures))
	case f.BreakerHalfOpen:
		add(WaitHalfOpen, time.Time{}, "one probe request at a time until one succeeds")
	}
	if f.RateLimit > 0 && f.Tokens < 1 {
		wait := time.Duration((1 - f.Tokens) / f.RateLimit * float64(time.Second))
		add(WaitRateLimited, now.Add(wait), fmt.Sprintf("rate_limit.rps %g", f.RateLimit))
	}
	if f.MaxInFlight > 0 && f.InFlight >= f.MaxInFlight {
		add(WaitInFlightFull, time.Time{}, fmt.Sprintf("max_in_flight %d", f.MaxInFlight))
	}
	if f.Taken > 0 {
		add(WaitTaken, f.TakenUntil, fmt.Sprintf("%d taken before this process started", f.Taken))
	}
	if h := f.HeldKeys; h != nil && h.Count > 0 {
		detail := plural(h.Count, "key")
		if h.Oldest != nil {
			detail += ", the oldest since " + h.Oldest.UTC().Format(time.RFC3339)
		}
		if why := h.WhyCounts(); why != "" {
			detail += "; why: " + why
		}
		add(WaitKeysHeld, time.Time{}, detail)
	}
	if f.Retries > 0 {
		detail := "1 retry waiting for its due time"
		if f.Retries != 1 {
			detail = fmt.Sprintf("%d retries waiting for their due time", f.Retries)
		}
		add(WaitRetryScheduled, f.NextRetry, detail)
	}
	return out
}

// Describe says in words why deliveries to an endpoint wait and until when,
// for people: "endpoint gone is disabled (answered 410 Gone): enable it to
// deliver".
func Describe(wt Wait, now time.Time) string {
	until := ""
	if wt.Until != nil {
		until = fmt.Sprintf(" until %s (in %s)", wt.Until.UTC().Format(time.RFC3339), wt.Until.Sub(now).Round(time.Second))
	}
	detail := ""
	if wt.Detail != "" {
		detail = " (" + wt.Detail + ")"
	}
	ep := "endpoint " + wt.Endpoint
	if wt.Endpoint == "" {
		ep = "the endpoint"
	}
	switch wt.Reason {
	case WaitDisabled:
		return fmt.Sprintf("%s is disabled%s: nothing goes until it is enabled (hookjet endpoints --enable %s)", ep, detail, wt.Endpoint)
	case WaitBreakerOpen:
		return fmt.Sprintf("%s: circuit breaker open%s%s; 'hookjet endpoints reset %s' closes it now", ep, until, detail, wt.Endpoint)
	case WaitHalfOpen:
		return fmt.Sprintf("%s: circuit breaker half-open%s", ep, detail)
	case WaitHeld:
		return fmt.Sprintf("%s: held by the receiver's Retry-After%s%s", ep, until, detail)
	case WaitRateLimited:
		return fmt.Sprintf("%s: rate limited%s%s", ep, until, detail)
	case WaitInFlightFull:
		return fmt.Sprintf("%s: all in-flight slots busy%s", ep, detail)
	case WaitKeysHeld:
		return fmt.Sprintf("%s: ordering keys wait behind an earlier delivery of their own key%s; its other keys go ('hookjet endpoints show %s' lists the held keys; a key held by a dead letter waits until it is replayed or discarded)", ep, detail, wt.Endpoint)
	case WaitRetryScheduled:
		next := ""
		if wt.Until != nil {
			next = fmt.Sprintf("; the next is due at %s (in %s)", wt.Until.UTC().Format(time.RFC3339), wt.Until.Sub(now).Round(time.Second))
		}
		return fmt.Sprintf("%s: retries wait%s%s; each goes when it is due", ep, detail, next)
	case WaitTaken:
		return fmt.Sprintf("%s: deliveries taken by a hookjet process that has not settled them (stopped uncleanly, or another one still delivering them); NATS gives them back%s%s", ep, until, detail)
	}
	return strings.TrimSpace(fmt.Sprintf("%s: %s%s%s", ep, wt.Reason, until, detail))
}

// Brief is waits in one word each and until when, comma-separated
// ("breaker_open until 2026-12-01T08:40:00Z,rate_limited"), "-" for none:
// the CLI's WAITING column.
func Brief(waits []Wait) string {
	if len(waits) == 0 {
		return "-"
	}
	parts := make([]string, 0, len(waits))
	for _, w := range waits {
		p := w.Reason
		if w.Until != nil {
			p += " until " + w.Until.UTC().Format(time.RFC3339)
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ",")
}

// Find returns the first wait of reason in waits.
func Find(waits []Wait, reason string) (Wait, bool) {
	for _, w := range waits {
		if w.Reason == reason {
			return w, true
		}
	}
	return Wait{}, false
}

// plural is "1 key", "3 keys".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func utcPtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

package api

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// HeldKeys says which ordering keys of an endpoint with ordering: key wait
// on an earlier delivery of their own key (EndpointStatus.HeldKeys): how
// many, since when the longest has waited, how many for each reason, and
// some of them, the longest-waiting first.
type HeldKeys struct {
	Count  int            `json:"count"`
	Oldest *time.Time     `json:"oldest,omitempty"`
	Why    map[string]int `json:"why,omitempty"`
	Keys   []HeldKey      `json:"keys,omitempty"`
}

// HeldKey is one held ordering key: since when it waits, why (one of the
// Held* constants), the event its next delivery is (the earliest of the key
// not yet settled), that delivery's attempts so far and when it is tried
// next, when that is known.
type HeldKey struct {
	Key         string     `json:"key"`
	Since       time.Time  `json:"since"`
	Why         string     `json:"why"`
	EventID     string     `json:"event_id"`
	Attempts    int        `json:"attempts,omitempty"`
	NextAttempt *time.Time `json:"next_attempt,omitempty"`
}

// Why a held key waits: what its earliest delivery not yet settled waits on.
const (
	HeldRetrying   = "retrying"    // a failed attempt; the retry is scheduled
	HeldDeadLetter = "dead_letter" // dead-lettered with ordering_on_dead_letter: hold, until replayed or discarded
	HeldBreaker    = "breaker"     // the endpoint's breaker is open
	HeldRateLimit  = "rate_limit"  // the endpoint's rate limit
	HeldDisabled   = "disabled"    // the endpoint is disabled
	HeldInFlight   = "in_flight"   // its attempt is out now
)

// HeldWhy lists the Held* reasons in the order they are shown.
var HeldWhy = []string{HeldRetrying, HeldDeadLetter, HeldBreaker, HeldRateLimit, HeldDisabled, HeldInFlight}

// WhyCounts says h.Why in words, the reasons in HeldWhy's order and any
// other after them by name: "2 retrying, 1 dead_letter". Empty for nil.
func (h *HeldKeys) WhyCounts() string {
	if h == nil {
		return ""
	}
	var parts []string
	add := func(why string) {
		if n := h.Why[why]; n > 0 {
			parts = append(parts, strconv.Itoa(n)+" "+why)
		}
	}
	for _, why := range HeldWhy {
		add(why)
	}
	for _, why := range slices.Sorted(maps.Keys(h.Why)) {
		if !slices.Contains(HeldWhy, why) {
			add(why)
		}
	}
	return strings.Join(parts, ", ")
}

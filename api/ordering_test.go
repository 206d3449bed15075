package api

import (
	"encoding/json"
	"testing"
	"time"
)

// The reasons read in a fixed order, unknown ones after them by name; a
// nil HeldKeys says nothing.
func TestHeldKeysWhyCounts(t *testing.T) {
	h := &HeldKeys{Count: 6, Why: map[string]int{HeldDeadLetter: 1, "zz_new": 1, HeldRetrying: 2, HeldInFlight: 2, HeldBreaker: 0}}
	if got, want := h.WhyCounts(), "2 retrying, 1 dead_letter, 2 in_flight, 1 zz_new"; got != want {
		t.Errorf("WhyCounts = %q, want %q", got, want)
	}
	if got := (*HeldKeys)(nil).WhyCounts(); got != "" {
		t.Errorf("nil: %q", got)
	}
}

// The JSON names of the held keys, and an endpoint without held keys has
// no held_keys field.
func TestHeldKeysJSON(t *testing.T) {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	b, err := json.Marshal(EndpointStatus{HeldKeys: &HeldKeys{Count: 1, Oldest: &since, Why: map[string]int{HeldRetrying: 1},
		Keys: []HeldKey{{Key: "customer-7", Since: since, Why: HeldRetrying, EventID: "evt_1", Attempts: 2, NextAttempt: &since}}}})
	if err != nil {
		t.Fatal(err)
	}
	var back struct {
		HeldKeys map[string]any `json:"held_keys"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	keys, _ := back.HeldKeys["keys"].([]any)
	if back.HeldKeys["count"] != 1.0 || back.HeldKeys["oldest"] != "2026-12-01T08:00:00Z" || len(keys) != 1 {
		t.Fatalf("held_keys = %v", back.HeldKeys)
	}
	k := keys[0].(map[string]any)
	for name, want := range map[string]any{"key": "customer-7", "since": "2026-12-01T08:00:00Z", "why": "retrying", "event_id": "evt_1", "attempts": 2.0, "next_attempt": "2026-12-01T08:00:00Z"} {
		if k[name] != want {
			t.Errorf("keys[0].%s = %v, want %v", name, k[name], want)
		}
	}
	b, err = json.Marshal(EndpointStatus{})
	if err != nil {
		t.Fatal(err)
	}
	var plain map[string]any
	if err := json.Unmarshal(b, &plain); err != nil {
		t.Fatal(err)
	}
	if _, ok := plain["held_keys"]; ok {
		t.Error("an endpoint without held keys shows held_keys")
	}
}

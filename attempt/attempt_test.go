package attempt

import (
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// TestRecordJSON pins the record's field names, part of the contract
// (DESIGN.md, "Delivery log").
func TestRecordJSON(t *testing.T) {
	r := Record{EventID: "evt_1", EventType: "order.created", Endpoint: "crm", Tenant: "acme", Attempt: 2,
		Trigger: TriggerRetry, Delivery: "d42", StartedAt: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), DurationMS: 12.5,
		Status: 503, Class: ClassTransient, Error: "HTTP 503", Response: "busy", Reason: "x", Seq: 7}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"attempt", "class", "delivery", "duration_ms", "endpoint", "error", "event_id", "event_type", "reason", "response", "seq", "started_at", "status", "tenant", "trigger"}
	if !slices.Equal(keys, want) {
		t.Errorf("keys %v, want %v", keys, want)
	}
	if m["started_at"] != "2026-12-01T08:00:00Z" {
		t.Errorf("started_at %v, want RFC 3339 UTC", m["started_at"])
	}
}

func TestValidate(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    Record
		ok   bool
	}{
		{"complete", Record{EventID: "e", Endpoint: "crm", Class: ClassSuccess}, true},
		{"no event", Record{Endpoint: "crm", Class: ClassSuccess}, false},
		{"no endpoint", Record{EventID: "e", Class: ClassSuccess}, false},
		{"unknown class", Record{EventID: "e", Endpoint: "crm", Class: "meh"}, false},
		{"dead letter", Record{EventID: "e", Endpoint: "crm", Class: ClassDeadLetter, Reason: "permanent"}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.r.Validate(); (err == nil) != tt.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tt.ok)
			}
		})
	}
}

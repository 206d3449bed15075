package catalog

import (
	"encoding/json"
	"fmt"
	"slices"
)

// The operational event types hookjet publishes itself, in the catalogue
// of every deployment and read-only.
const (
	TypeEndpointDisabled      = "hookjet.endpoint.disabled"
	TypeEndpointEnabled       = "hookjet.endpoint.enabled"
	TypeEndpointBreakerOpened = "hookjet.endpoint.breaker_opened"
	TypeEndpointBreakerClosed = "hookjet.endpoint.breaker_closed"
	TypeDeadLetter            = "hookjet.dead_letter"
	// TypeTest is the type of an endpoint's test event
	// (POST /api/v1/endpoints/{id}/test).
	TypeTest = "hookjet.test"
)

// operationalSchema is the payload of the operational types:
// {"type", "endpoint": {"id", "description"}, "tenant", "reason", "count",
// "at"}. It requires what every one of them carries (type, endpoint.id,
// at) and lets tenant, reason and description be null: hookjet's own
// events must never fail their schema under enforce.
const operationalSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["type", "endpoint", "at"],
  "properties": {
    "type": {"const": %q},
    "endpoint": {
      "type": "object",
      "required": ["id"],
      "properties": {"id": {"type": "string"}, "description": {"type": ["string", "null"]}}
    },
    "tenant": {"type": ["string", "null"]},
    "reason": {"type": ["string", "null"]},
    "count": {"type": "integer", "minimum": 0},
    "at": {"type": "string", "format": "date-time"}
  }
}`

const testSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "required": ["type", "endpoint", "sent_at"],
  "properties": {
    "type": {"const": "hookjet.test"},
    "endpoint": {"type": "string"},
    "sent_at": {"type": "string", "format": "date-time"}
  }
}`

// builtin are the built-in types, compiled once.
var builtin = func() []*Type {
	ops := []struct{ name, desc, reason string }{
		{TypeEndpointDisabled, "An endpoint was disabled (a 410 Gone, or an operator).", "gone"},
		{TypeEndpointEnabled, "An endpoint was enabled again.", "operator"},
		{TypeEndpointBreakerOpened, "An endpoint's circuit breaker opened: its deliveries wait for the cooldown.", "5 consecutive failures"},
		{TypeEndpointBreakerClosed, "An endpoint's circuit breaker closed: its deliveries go again.", "probe succeeded"},
		{TypeDeadLetter, "Deliveries to an endpoint were dead-lettered (at most one event per endpoint per minute, with the count).", "exhausted"},
	}
	out := make([]*Type, 0, len(ops)+1)
	for _, o := range ops {
		ex, _ := json.Marshal(map[string]any{
			"type": o.name, "endpoint": map[string]string{"id": "crm", "description": "CRM sync"},
			"tenant": "acme", "reason": o.reason, "count": 1, "at": "2026-12-07T10:00:00Z",
		})
		out = append(out, mustCompile(Definition{
			Name: o.name, Description: o.desc,
			Schema: json.RawMessage(fmt.Sprintf(operationalSchema, o.name)), Examples: []json.RawMessage{ex},
		}))
	}
	return append(out, mustCompile(Definition{
		Name: TypeTest, Description: "A test event sent to one endpoint (hookjet endpoints test).",
		Schema:   json.RawMessage(testSchema),
		Examples: []json.RawMessage{json.RawMessage(`{"type":"hookjet.test","endpoint":"crm","sent_at":"2026-12-07T10:00:00Z"}`)},
	}))
}()

// Builtin returns the built-in types, ordered as declared.
func Builtin() []*Type { return slices.Clone(builtin) }

func mustCompile(d Definition) *Type {
	t, err := Compile(d)
	if err != nil {
		panic("catalog: built-in type " + d.Name + ": " + err.Error())
	}
	return t
}

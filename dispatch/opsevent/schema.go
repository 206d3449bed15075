package opsevent

import (
	"encoding/json"
	"time"
)

// Schema is the JSON Schema (2020-12) of every operational event's
// payload ([Payload]), for the catalogue.
const Schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "properties": {
    "type": {"type": "string", "enum": ["hookjet.endpoint.disabled", "hookjet.endpoint.enabled", "hookjet.endpoint.breaker_opened", "hookjet.endpoint.breaker_closed", "hookjet.dead_letter"]},
    "endpoint": {
      "type": "object",
      "properties": {"id": {"type": "string"}, "description": {"type": "string"}},
      "required": ["id", "description"],
      "additionalProperties": false
    },
    "tenant": {"type": "string", "description": "the endpoint's tenant; empty for an operator's endpoint"},
    "reason": {"type": "string"},
    "count": {"type": "integer", "minimum": 1},
    "at": {"type": "string", "format": "date-time"}
  },
  "required": ["type", "endpoint", "tenant", "reason", "count", "at"],
  "additionalProperties": false
}`

// Description says what an event of type typ means, for the catalogue;
// "" for a type that is not hookjet's.
func Description(typ string) string {
	switch typ {
	case TypeDisabled:
		return "An endpoint was disabled: it answered 410 (reason gone) or an operator disabled it (reason operator)."
	case TypeEnabled:
		return "An operator enabled an endpoint (reason operator)."
	case TypeBreakerOpened:
		return "An endpoint's circuit breaker opened after failures in a row (reason failures) or a failed probe (reason probe_failed)."
	case TypeBreakerClosed:
		return "An endpoint's circuit breaker closed after a successful probe (reason probe_succeeded) or an operator's reset (reason reset)."
	case TypeDeadLetter:
		return "An endpoint dead-lettered in the minute starting at at: count dead letters, reason the last one's. At most one per endpoint and minute."
	}
	return ""
}

// Example is an example payload of type typ, for the catalogue.
func Example(typ string) json.RawMessage {
	p := Payload{
		Type: typ, Endpoint: Endpoint{ID: "acme-crm", Description: "Acme's CRM"}, Tenant: "acme", Count: 1,
		At: time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC),
	}
	switch typ {
	case TypeDisabled:
		p.Reason = "gone"
	case TypeEnabled:
		p.Reason = "operator"
	case TypeBreakerOpened:
		p.Reason = "failures"
	case TypeBreakerClosed:
		p.Reason = "probe_succeeded"
	case TypeDeadLetter:
		p.Reason, p.Count, p.At = "exhausted", 12, p.At.Truncate(time.Minute)
	}
	b, _ := json.Marshal(p)
	return b
}

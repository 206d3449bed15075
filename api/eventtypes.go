package api

import (
	"encoding/json"
	"errors"
	"time"
)

// EventType is an event type of the catalogue
// (/api/v1/event-types/{name}).
type EventType struct {
	// Name is the event type (order.created): tokens of letters, digits,
	// '_' and '-' separated by '.'; names starting with "hookjet." are
	// hookjet's own.
	Name string `json:"name"`
	// Description says what the event means.
	Description string `json:"description,omitempty"`
	// Schema is the payload's JSON Schema (2020-12); absent: any payload.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Examples are example payloads, each valid against Schema.
	Examples []json.RawMessage `json:"examples,omitempty"`
	// Deprecated marks a type publishers should stop using.
	Deprecated bool `json:"deprecated"`
	// Source is builtin (hookjet's own), config (a config file's) or api;
	// only api types change through the API. Ignored in requests.
	Source string `json:"source,omitempty"`
	// UpdatedAt is when an api or config type was last stored; absent for
	// builtin ones. Ignored in requests.
	UpdatedAt *time.Time `json:"updated_at,omitempty"`
}

// EventTypePatch changes an event type: each field present replaces the
// type's (PATCH /api/v1/event-types/{name}); a null schema removes it.
type EventTypePatch struct {
	Description *string            `json:"description,omitempty"`
	Schema      json.RawMessage    `json:"schema,omitempty"`
	Examples    *[]json.RawMessage `json:"examples,omitempty"`
	Deprecated  *bool              `json:"deprecated,omitempty"`
}

// EventTypeList answers GET /api/v1/event-types: every type ordered by
// name, and how payloads are checked (catalog.validate, catalog.strict).
type EventTypeList struct {
	EventTypes []EventType `json:"event_types"`
	Validate   string      `json:"validate"`
	Strict     bool        `json:"strict"`
}

// Error kinds of the event types' calls.
var (
	// ErrUnknownEventType is returned for a name not in the catalogue
	// (404).
	ErrUnknownEventType = errors.New("unknown event type")
	// ErrEventTypeExists is returned when creating a type whose name is
	// taken (409).
	ErrEventTypeExists = errors.New("event type exists")
	// ErrReadOnly is returned when changing a type the API does not own:
	// a builtin or config one (409).
	ErrReadOnly = errors.New("read-only")
)

// ProblemError is bad input naming its field: package admin answers it 400
// with the problem. It wraps [ErrBadRequest].
type ProblemError struct{ Problem }

func (e *ProblemError) Error() string { return e.Problem.Error }

// Unwrap returns ErrBadRequest.
func (e *ProblemError) Unwrap() error { return ErrBadRequest }

package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
)

// eventType is one type of the event-type catalogue
// (GET /api/v1/event-types), as the portal shows it.
type eventType struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Schema      json.RawMessage   `json:"schema"`
	Examples    []json.RawMessage `json:"examples"`
	Deprecated  bool              `json:"deprecated"`
}

// SchemaText is the type's JSON Schema, indented; "" without one.
func (t eventType) SchemaText() string { return indentJSON(t.Schema) }

// ExampleTexts are the type's examples, indented.
func (t eventType) ExampleTexts() []string {
	out := make([]string, 0, len(t.Examples))
	for _, e := range t.Examples {
		out = append(out, indentJSON(e))
	}
	return out
}

// indentJSON is raw indented for reading; "" for none or null.
func indentJSON(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}

// catalogue is the event types, in the API's order.
type catalogue []eventType

// find returns the type named name.
func (c catalogue) find(name string) (eventType, bool) {
	for _, t := range c {
		if t.Name == name {
			return t, true
		}
	}
	return eventType{}, false
}

// catalogue reads the event-type catalogue; nil when this hookjet has
// none or it cannot be read (the pages then offer patterns typed in).
func (c *Console) catalogue(ctx context.Context) catalogue {
	var page struct {
		EventTypes catalogue `json:"event_types"`
	}
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/event-types", nil, &page); err != nil {
		if !missingRoute(err) {
			c.log.Warn("console: event-type catalogue", "err", err)
		}
		return nil
	}
	return page.EventTypes
}

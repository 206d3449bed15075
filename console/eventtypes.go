package console

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/hookjet/hookjet/api"
)

// eventTypesData is the catalogue page's: every type, with its schema and
// examples indented for reading, and how payloads are checked.
type eventTypesData struct {
	Validate string
	Strict   bool
	Types    []eventTypeRow
}

type eventTypeRow struct {
	api.EventType
	SchemaText   string
	ExampleTexts []string
}

// eventTypesPage lists the event-type catalogue (GET /api/v1/event-types).
func (c *Console) eventTypesPage(w http.ResponseWriter, r *http.Request, p *page) {
	p.Title = "Event types"
	var l api.EventTypeList
	if _, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/event-types", nil, &l); err != nil {
		c.fail(w, p, err)
		return
	}
	d := eventTypesData{Validate: l.Validate, Strict: l.Strict}
	for _, t := range l.EventTypes {
		row := eventTypeRow{EventType: t, SchemaText: indented(t.Schema)}
		for _, ex := range t.Examples {
			row.ExampleTexts = append(row.ExampleTexts, indented(ex))
		}
		d.Types = append(d.Types, row)
	}
	p.Data = d
	c.render(w, http.StatusOK, "eventtypes", p)
}

// indented is raw JSON indented by two spaces ("" for none).
func indented(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		return string(raw)
	}
	return b.String()
}

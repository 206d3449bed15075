package publish

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/hookjet/hookjet/catalog"
)

// StatusInvalid is the status of an event the catalogue refuses (HTTP
// 422, and ErrorReply.Status of a publish request).
const StatusInvalid = http.StatusUnprocessableEntity

// WithCatalog checks every event against the catalogue in force in l
// before it is stored: under catalog.strict a type not in it is refused
// (naming type), under catalog.validate enforce a payload that fails its
// type's schema (naming data and the JSON pointer of each problem:
// "data/amount: want number, got string"). Warn and off store the event
// (the fan-out counts what warn lets through). Without it nothing is
// checked.
func WithCatalog(l *catalog.Live) Option { return func(c *Committer) { c.catalog = l } }

// checks reports whether the catalogue in force may refuse an event.
func (c *Committer) checks() bool {
	if c.catalog == nil {
		return false
	}
	cat := c.catalog.Load()
	return cat.Mode() == catalog.Enforce || cat.Strict()
}

// refusals returns every problem the catalogue finds in events, named
// under events[i]. when batch is set; none when it accepts them all.
func (c *Committer) refusals(events []Event, batch bool) []Problem {
	if c.catalog == nil {
		return nil
	}
	cat := c.catalog.Load()
	if cat.Mode() != catalog.Enforce && !cat.Strict() {
		return nil
	}
	var ps []Problem
	for i, e := range events {
		v := cat.Check(e.Type, e.Data)
		if v.Unknown {
			prefix := fieldPrefix(batch, i)
			ps = append(ps, Problem{Field: prefix + "type", Error: prefix + "type: " + strconv.Quote(e.Type) + " is not in the catalogue (catalog.strict); GET /api/v1/event-types lists the types"})
			continue
		}
		if cat.Mode() != catalog.Enforce {
			continue
		}
		for _, p := range v.Problems {
			field := fieldPrefix(batch, i) + "data" + p.Pointer
			ps = append(ps, Problem{Field: field, Error: field + ": " + p.Reason})
		}
	}
	return ps
}

func fieldPrefix(batch bool, i int) string {
	if !batch {
		return ""
	}
	return "events[" + strconv.Itoa(i) + "]."
}

// batched reports whether a request body that decoded is a batch
// ({"events": [...]}).
func batched(body []byte) bool {
	if !bytes.Contains(body, []byte(`"events"`)) {
		return false
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return false
	}
	_, ok := top["events"]
	return ok
}

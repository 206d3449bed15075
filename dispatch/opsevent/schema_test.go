package opsevent

import (
	"encoding/json"
	"slices"
	"testing"
)

// The schema names exactly the payload's fields, all required, and every
// type; each type has a description and an example with those fields.
func TestSchemaDescribesThePayload(t *testing.T) {
	var s struct {
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if err := json.Unmarshal([]byte(Schema), &s); err != nil {
		t.Fatal(err)
	}
	for _, typ := range Types() {
		var ex map[string]any
		if err := json.Unmarshal(Example(typ), &ex); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range ex {
			keys = append(keys, k)
			if _, ok := s.Properties[k]; !ok {
				t.Errorf("example of %s has %q, which the schema does not name", typ, k)
			}
		}
		slices.Sort(keys)
		if req := slices.Sorted(slices.Values(s.Required)); !slices.Equal(keys, req) {
			t.Errorf("example of %s has %v, the schema requires %v", typ, keys, req)
		}
		if ex["type"] != typ || ex["reason"] == "" || Description(typ) == "" {
			t.Errorf("%s: example %v, description %q", typ, ex, Description(typ))
		}
		if !slices.Contains(s.Properties["type"].Enum, typ) {
			t.Errorf("the schema's type enum lacks %s", typ)
		}
	}
}

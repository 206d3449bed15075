package config

import (
	"encoding/json"
	"testing"

	"github.com/hookjet/hookjet/catalog"
)

// The catalog keys: defaults, YAML (a schema written in YAML becomes
// JSON), environment, and validation naming the key.
func TestCatalogKeys(t *testing.T) {
	if d := Default(); d.Catalog.Mode() != catalog.Warn || d.Catalog.Strict || d.Catalog.EventTypes != nil {
		t.Fatalf("defaults: %+v, want warn, not strict, no types", d.Catalog)
	}
	const file = `
catalog:
  validate: enforce
  event_types:
    - name: order.created
      description: An order was placed.
      schema:
        type: object
        required: [amount]
        properties:
          amount: {type: number}
      examples:
        - {amount: 12.5}
`
	c, err := Parse([]byte(file), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if c.Catalog.Mode() != catalog.Enforce || len(c.Catalog.EventTypes) != 1 {
		t.Fatalf("YAML: %+v", c.Catalog)
	}
	var schema map[string]any
	if err := json.Unmarshal(c.Catalog.EventTypes[0].Schema, &schema); err != nil || schema["type"] != "object" {
		t.Fatalf("schema as JSON: %s %v", c.Catalog.EventTypes[0].Schema, err)
	}
	types, err := c.Catalog.CompileEventTypes()
	if err != nil || len(types) != 1 {
		t.Fatalf("CompileEventTypes: %v %v", types, err)
	}
	if ps := types[0].Validate([]byte(`{"amount":"12"}`)); len(ps) != 1 || ps[0].String() != "/amount: want number, got string" {
		t.Errorf("compiled schema: %v", ps)
	}
	env := map[string]string{"HOOKJET_CATALOG_VALIDATE": "off", "HOOKJET_CATALOG_STRICT": "true"}
	c, err = Parse(nil, func(k string) string { return env[k] })
	if err != nil || c.Catalog.Mode() != catalog.Off || !c.Catalog.Strict {
		t.Fatalf("environment: %+v %v", c.Catalog, err)
	}
	for _, tt := range []struct {
		yaml, key, msg string
	}{
		{"catalog:\n  validate: loud\n", "catalog.validate", "want off, warn or enforce"},
		{"catalog:\n  event_types:\n    - description: x\n", "catalog.event_types[0].name", "is required"},
		{"catalog:\n  event_types:\n    - name: order.*\n", "catalog.event_types[0].name", "no wildcards"},
		{"catalog:\n  event_types:\n    - name: hookjet.mine\n", "catalog.event_types[0].name", "hookjet's own"},
		{"catalog:\n  event_types:\n    - name: a\n    - name: a\n", "catalog.event_types[1].name", "declared again"},
		{"catalog:\n  event_types:\n    - name: a\n      schema: {type: strng}\n", "catalog.event_types[0].schema", "/type"},
		{"catalog:\n  event_types:\n    - name: a\n      schema: {type: object, required: [n]}\n      examples: [{n: 1}, {}]\n", "catalog.event_types[0].examples[1]", "/n: is required"},
	} {
		_, err := Parse([]byte(tt.yaml), func(string) string { return "" })
		wantKeyErr(t, err, tt.key, tt.msg)
	}
}

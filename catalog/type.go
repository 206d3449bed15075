package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// MaxNameLen is the longest event type name, in bytes (an event type's
// limit).
const MaxNameLen = 255

// Definition is an event type as it is written: in the config file
// (catalog.event_types), through the API, in the shared bucket.
type Definition struct {
	// Name is the event type (order.created): tokens of letters, digits,
	// '_' and '-' separated by '.', at most [MaxNameLen] bytes.
	Name string `json:"name"`
	// Description says what the event means; empty: none.
	Description string `json:"description,omitempty"`
	// Schema is the payload's JSON Schema (draft 2020-12 unless it names
	// another in $schema); empty: any payload is valid.
	Schema json.RawMessage `json:"schema,omitempty"`
	// Examples are example payloads, each valid against Schema; nil: none.
	Examples []json.RawMessage `json:"examples,omitempty"`
	// Deprecated marks a type publishers should stop using; events of it
	// are still accepted.
	Deprecated bool `json:"deprecated,omitempty"`
}

// Type is a compiled [Definition]: safe for concurrent use, never changed.
type Type struct {
	def    Definition
	schema *jsonschema.Schema // nil: no schema
	fast   *fastSchema        // nil: no fast path (see fast.go)
}

// Definition returns the type's definition. Its byte slices are shared:
// the caller must not change them.
func (t *Type) Definition() Definition { return t.def }

// Name is the type's name.
func (t *Type) Name() string { return t.def.Name }

// HasSchema reports whether payloads of the type are checked.
func (t *Type) HasSchema() bool { return t.schema != nil }

// Compile checks d and compiles its schema. It refuses, with a
// [*FieldError] naming the field: a bad name ("name"), a schema that is not
// JSON or does not compile ("schema"), an example that is not JSON or fails
// the schema ("examples[i]", with every problem).
func Compile(d Definition) (*Type, error) {
	if err := CheckName(d.Name); err != nil {
		return nil, &FieldError{Field: "name", Err: err}
	}
	t := &Type{def: d}
	if len(bytes.TrimSpace(d.Schema)) > 0 && !isNull(d.Schema) {
		sch, err := compileSchema(d.Schema)
		if err != nil {
			return nil, &FieldError{Field: "schema", Err: err}
		}
		t.schema = sch
		t.fast = compileFast(sch)
	} else {
		t.def.Schema = nil
	}
	for i, ex := range d.Examples {
		field := "examples[" + strconv.Itoa(i) + "]"
		if !json.Valid(ex) {
			return nil, &FieldError{Field: field, Err: errors.New("not JSON")}
		}
		if ps := t.Validate(ex); len(ps) > 0 {
			return nil, &FieldError{Field: field, Err: fmt.Errorf("fails the schema: %s", Join(ps))}
		}
	}
	return t, nil
}

// schemaURL is the location a schema is compiled under; a schema's $ref
// may point within it, never to files or the network.
const schemaURL = "mem:///schema.json"

// compileSchema compiles one schema document: draft 2020-12 by default,
// formats asserted, no loader (a $ref outside the document is refused).
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, errors.New("must be a JSON object (or true/false)")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(noLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	sch, err := c.Compile(schemaURL)
	if err != nil {
		return nil, schemaError(err)
	}
	return sch, nil
}

// schemaError says why a schema does not compile in a line: the
// metaschema's own problems as pointers into the schema.
func schemaError(err error) error {
	if sve, ok := errors.AsType[*jsonschema.SchemaValidationError](err); ok {
		if ve, ok := errors.AsType[*jsonschema.ValidationError](sve.Err); ok {
			return errors.New(Join(problems(ve, nil)))
		}
		return sve.Err
	}
	msg := strings.ReplaceAll(err.Error(), schemaURL, "schema")
	return errors.New(msg)
}

// noLoader refuses every document a $ref names outside the schema.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: a schema may only refer within itself", url)
}

// CheckName reports what is wrong with an event type's name, or nil.
func CheckName(name string) error {
	switch {
	case name == "":
		return errors.New("is required")
	case len(name) > MaxNameLen:
		return fmt.Errorf("is %d bytes, at most %d", len(name), MaxNameLen)
	}
	for tok := range strings.SplitSeq(name, ".") {
		if tok == "" {
			return fmt.Errorf("%q has an empty token", name)
		}
		for _, r := range tok {
			if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' && r != '-' {
				return fmt.Errorf("%q: letters, digits, '_' and '-' in tokens separated by '.' (no wildcards)", name)
			}
		}
	}
	return nil
}

func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/hookjet/hookjet/catalog"
)

// Catalog configures the event-type catalogue (package catalog): how
// payloads are checked against their type's schema, and the types this
// file declares (owned by the file, read-only through the API, like its
// endpoints).
type Catalog struct {
	// Validate is off, warn (the default) or enforce: with enforce the HTTP
	// and request publish paths refuse an invalid payload (422) and a plain
	// JetStream publish of one is dead-lettered as invalid; warn delivers it
	// and counts it in hookjet_invalid_events_total; off checks nothing.
	Validate string `yaml:"validate"`
	// Strict refuses events of types not in the catalogue. False (the
	// default) accepts any type.
	Strict bool `yaml:"strict"`
	// EventTypes are the types this file declares. Nil means none.
	EventTypes []EventType `yaml:"event_types"`
}

// EventType is an event type the config file declares.
type EventType struct {
	// Name is the type (order.created).
	Name string `yaml:"name"`
	// Description says what the event means; empty: none.
	Description string `yaml:"description"`
	// Schema is the payload's JSON Schema (2020-12), written in YAML or
	// JSON; empty: any payload.
	Schema JSON `yaml:"schema"`
	// Examples are example payloads, each valid against Schema.
	Examples []JSON `yaml:"examples"`
	// Deprecated marks a type publishers should stop using.
	Deprecated bool `yaml:"deprecated"`
}

// JSON is a value of the config file kept as JSON (a schema, an example
// payload): any YAML value, converted.
type JSON []byte

var (
	jsonType       = reflect.TypeFor[JSON]()
	eventTypesType = reflect.TypeFor[[]EventType]()
)

// Mode is catalog.validate as a [catalog.Mode] (warn when it is not one).
func (c Catalog) Mode() catalog.Mode {
	m, err := catalog.ParseMode(c.Validate)
	if err != nil {
		return catalog.Warn
	}
	return m
}

// Definition is t as the catalogue's definition.
func (t EventType) Definition() catalog.Definition {
	d := catalog.Definition{Name: t.Name, Description: t.Description, Deprecated: t.Deprecated}
	if len(t.Schema) > 0 {
		d.Schema = json.RawMessage(t.Schema)
	}
	for _, ex := range t.Examples {
		d.Examples = append(d.Examples, json.RawMessage(ex))
	}
	return d
}

// CompileEventTypes compiles the file's event types; Validate has checked
// them.
func (c Catalog) CompileEventTypes() ([]*catalog.Type, error) {
	out := make([]*catalog.Type, 0, len(c.EventTypes))
	for i, et := range c.EventTypes {
		t, err := catalog.Compile(et.Definition())
		if err != nil {
			return nil, fmt.Errorf("catalog.event_types[%d]: %w", i, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// ReservedTypePrefix starts the names of hookjet's own event types: no file
// or API may declare one.
const ReservedTypePrefix = "hookjet."

// CheckEventTypeName refuses a name the catalogue cannot hold or hookjet
// reserves.
func CheckEventTypeName(name string) error {
	if err := catalog.CheckName(name); err != nil {
		return err
	}
	if strings.HasPrefix(name, ReservedTypePrefix) {
		return fmt.Errorf("%q: types starting with %q are hookjet's own", name, ReservedTypePrefix)
	}
	return nil
}

// validateCatalog checks the catalog section: the mode, and each event
// type's name (unique, not reserved), schema and examples.
func (c *Config) validateCatalog(p *problems) {
	if _, err := catalog.ParseMode(c.Catalog.Validate); err != nil {
		p.add("catalog.validate", "%w", err)
	}
	seen := map[string]int{}
	for i, et := range c.Catalog.EventTypes {
		key := fmt.Sprintf("catalog.event_types[%d]", i)
		if err := CheckEventTypeName(et.Name); err != nil {
			p.add(key+".name", "%w", err)
			continue
		}
		if j, dup := seen[et.Name]; dup {
			p.add(key+".name", "%q is declared again (catalog.event_types[%d])", et.Name, j)
			continue
		}
		seen[et.Name] = i
		if _, err := catalog.Compile(et.Definition()); err != nil {
			if fe, ok := errors.AsType[*catalog.FieldError](err); ok {
				p.add(key+"."+fe.Field, "%w", fe.Err)
			} else {
				p.add(key, "%w", err)
			}
		}
	}
}

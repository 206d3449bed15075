package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"sync/atomic"
)

// Mode is what the publish paths and the fan-out do with a payload that
// fails its type's schema.
type Mode int

const (
	// Off checks nothing.
	Off Mode = iota
	// Warn delivers an invalid event and counts it
	// (hookjet_invalid_events_total).
	Warn
	// Enforce refuses it: 422 on the HTTP and request publish paths, a dead
	// letter with reason invalid for each endpoint a plain JetStream
	// publish of it matched.
	Enforce
)

// String is the mode as the config file spells it.
func (m Mode) String() string {
	switch m {
	case Off:
		return "off"
	case Warn:
		return "warn"
	case Enforce:
		return "enforce"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// ParseMode reads off, warn or enforce.
func ParseMode(s string) (Mode, error) {
	for _, m := range []Mode{Off, Warn, Enforce} {
		if s == m.String() {
			return m, nil
		}
	}
	return Off, fmt.Errorf("%q: want off, warn or enforce", s)
}

// Source says where a type in force comes from.
type Source string

// The sources of types: hookjet's own operational types, the config
// file's (read-only through the API) and the API's.
const (
	SourceBuiltin Source = "builtin"
	SourceConfig  Source = "config"
	SourceAPI     Source = "api"
)

// Entry is a type in force and where it comes from.
type Entry struct {
	*Type
	Source Source
}

// Catalog is one immutable snapshot of the catalogue: the types in force
// and how payloads are checked. Safe for concurrent use.
type Catalog struct {
	mode   Mode
	strict bool
	types  map[string]Entry
}

// New returns the catalogue of the built-in types, then this process's
// config file's own (Source config), then the stored ones (the API's and
// other processes' files', each with its source); an earlier one wins a
// name. Strict refuses types not in it.
func New(mode Mode, strict bool, own []*Type, stored []Entry) *Catalog {
	c := &Catalog{mode: mode, strict: strict, types: make(map[string]Entry, len(builtin)+len(own)+len(stored))}
	for _, e := range stored {
		c.types[e.Name()] = e
	}
	for _, t := range own {
		c.types[t.Name()] = Entry{t, SourceConfig}
	}
	for _, t := range builtin {
		c.types[t.Name()] = Entry{t, SourceBuiltin}
	}
	return c
}

// Mode is how payloads are checked.
func (c *Catalog) Mode() Mode { return c.mode }

// Strict reports whether types not in the catalogue are refused.
func (c *Catalog) Strict() bool { return c.strict }

// Lookup returns the type named name.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	e, ok := c.types[name]
	return e, ok
}

// Len is the number of types, the built-in ones included.
func (c *Catalog) Len() int { return len(c.types) }

// Entries returns every type, ordered by name.
func (c *Catalog) Entries() []Entry {
	out := make([]Entry, 0, len(c.types))
	for _, e := range c.types {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Compare(a.Name(), b.Name()) })
	return out
}

// Verdict is what [Catalog.Check] found.
type Verdict struct {
	// Unknown is set for a type not in the catalogue under strict.
	Unknown bool
	// Problems are the payload's, when the mode is not Off.
	Problems []Problem
}

// Invalid reports whether the event fails the catalogue.
func (v Verdict) Invalid() bool { return v.Unknown || len(v.Problems) > 0 }

// Reason says the verdict in a line: "type: not in the catalogue" or the
// problems joined.
func (v Verdict) Reason() string {
	if v.Unknown {
		return "type: not in the catalogue (catalog.strict)"
	}
	return Join(v.Problems)
}

// Check checks an event of type typ with payload data: strict refuses a
// type not in the catalogue, and a mode other than Off validates the
// payload of a type with a schema (once; the caller decides what Warn and
// Enforce do with it).
func (c *Catalog) Check(typ string, data []byte) Verdict {
	e, ok := c.types[typ]
	if !ok {
		return Verdict{Unknown: c.strict}
	}
	if c.mode == Off {
		return Verdict{}
	}
	return Verdict{Problems: e.Validate(data)}
}

// off is the catalogue of a nil [Live]: nothing checked.
var off = New(Off, false, nil, nil)

// Live holds the catalogue in force for concurrent readers; a change
// stores a whole new [Catalog]. A nil *Live holds an empty catalogue with
// mode Off.
type Live struct{ p atomic.Pointer[Catalog] }

// NewLive returns a Live holding c.
func NewLive(c *Catalog) *Live {
	l := &Live{}
	l.p.Store(c)
	return l
}

// Load returns the catalogue in force.
func (l *Live) Load() *Catalog {
	if l == nil {
		return off
	}
	if c := l.p.Load(); c != nil {
		return c
	}
	return off
}

// Store puts c in force.
func (l *Live) Store(c *Catalog) { l.p.Store(c) }

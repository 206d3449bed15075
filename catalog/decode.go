package catalog

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// decode reads a JSON document into the values the schema library
// validates (map[string]any, []any, string, json.Number, bool, nil). It
// checks the document with json.Valid (which allocates nothing) and then
// parses it without reflection: encoding/json's decoder into any took half
// of a 1 KB payload's validation.
func decode(data []byte) (any, error) {
	if !json.Valid(data) {
		var v any
		err := json.Unmarshal(data, &v)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	p := parser{b: string(data)}
	return p.value(), nil
}

// parser reads a document json.Valid accepted. It holds the document as
// one string, and the strings and numbers it returns are slices of it: one
// allocation for all of them.
type parser struct {
	b string
	i int
}

func (p *parser) space() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\r', '\n':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) value() any {
	p.space()
	switch c := p.b[p.i]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		return p.str()
	case 't':
		p.i += 4
		return true
	case 'f':
		p.i += 5
		return false
	case 'n':
		p.i += 4
		return nil
	default:
		start := p.i
		for p.i < len(p.b) {
			switch p.b[p.i] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
				return json.Number(p.b[start:p.i])
			}
			p.i++
		}
		return json.Number(p.b[start:p.i])
	}
}

func (p *parser) object() map[string]any {
	p.i++ // {
	m := make(map[string]any, 8)
	for {
		p.space()
		if p.b[p.i] == '}' {
			p.i++
			return m
		}
		if p.b[p.i] == ',' {
			p.i++
			p.space()
		}
		k := p.str()
		p.space()
		p.i++ // :
		m[k] = p.value()
	}
}

func (p *parser) array() []any {
	p.i++ // [
	a := make([]any, 0, 4)
	for {
		p.space()
		switch p.b[p.i] {
		case ']':
			p.i++
			return a
		case ',':
			p.i++
		}
		a = append(a, p.value())
	}
}

// str reads a string at p.i (its opening quote); one with escapes or bytes
// that are not UTF-8 is decoded by encoding/json.
func (p *parser) str() string {
	start := p.i
	p.i++
	plain := true
	for {
		c := p.b[p.i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			p.i += 2
			continue
		}
		if c >= utf8.RuneSelf {
			plain = false
		}
		p.i++
	}
	p.i++
	if plain {
		return p.b[start+1 : p.i-1]
	}
	var s string
	_ = json.Unmarshal([]byte(p.b[start:p.i]), &s) // valid: json.Valid said so
	return s
}

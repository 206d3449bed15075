package catalog

import (
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// decode reads a JSON document into the values the schema library
// validates (map[string]any, []any, string, json.Number, bool, nil)
// without reflection: encoding/json's decoder into any took half of a 1 KB
// payload's validation. Its strings and numbers are slices of one copy of
// the document. A document that is not JSON is refused with
// encoding/json's own message.
func decode(data []byte) (any, error) {
	p := parser{b: string(data)}
	v, ok := p.value(0)
	if ok {
		p.space()
		ok = p.i == len(p.b)
	}
	if !ok {
		var x any
		err := json.Unmarshal(data, &x)
		if err == nil {
			err = errors.New("invalid JSON")
		}
		return nil, err
	}
	return v, nil
}

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

// parser reads a document. ok false means it is not JSON (decode asks
// encoding/json why).
type parser struct {
	b string
	i int
}

// next reads what follows a member or an element, after white space: a
// comma (more), the closing close (the end), or anything else (not ok).
func (p *parser) next(close byte) (more, ok bool) {
	p.space()
	if p.i >= len(p.b) {
		return false, false
	}
	switch p.b[p.i] {
	case ',':
		p.i++
		return true, true
	case close:
		p.i++
		return false, true
	}
	return false, false
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

// literal consumes lit.
func (p *parser) literal(lit string) bool {
	if len(p.b)-p.i < len(lit) || p.b[p.i:p.i+len(lit)] != lit {
		return false
	}
	p.i += len(lit)
	return true
}

func (p *parser) value(depth int) (any, bool) {
	p.space()
	if p.i >= len(p.b) {
		return nil, false
	}
	switch c := p.b[p.i]; {
	case (c == '{' || c == '[') && depth >= maxDepth:
		return nil, false
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return nil, false
}

func (p *parser) digits() int {
	n := 0
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
		n++
	}
	return n
}

// number reads -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?.
func (p *parser) number() (any, bool) {
	lit, ok := p.numberLit()
	if !ok {
		return nil, false
	}
	return json.Number(lit), true
}

// numberLit reads a number and returns its text.
func (p *parser) numberLit() (string, bool) {
	start := p.i
	if p.b[p.i] == '-' {
		p.i++
	}
	switch {
	case p.i < len(p.b) && p.b[p.i] == '0':
		p.i++
	case p.digits() == 0:
		return "", false
	}
	if p.i < len(p.b) && p.b[p.i] == '.' {
		p.i++
		if p.digits() == 0 {
			return "", false
		}
	}
	if p.i < len(p.b) && (p.b[p.i] == 'e' || p.b[p.i] == 'E') {
		p.i++
		if p.i < len(p.b) && (p.b[p.i] == '+' || p.b[p.i] == '-') {
			p.i++
		}
		if p.digits() == 0 {
			return "", false
		}
	}
	return p.b[start:p.i], true
}

func (p *parser) object(depth int) (any, bool) {
	p.i++ // {
	m := make(map[string]any, 8)
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return m, true
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return nil, false
		}
		k, ok := p.str()
		if !ok {
			return nil, false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, false
		}
		p.i++
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v
		if more, ok := p.next('}'); !ok {
			return nil, false
		} else if !more {
			return m, true
		}
	}
}

func (p *parser) array(depth int) (any, bool) {
	p.i++ // [
	a := make([]any, 0, 4)
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return a, true
	}
	for {
		v, ok := p.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if more, ok := p.next(']'); !ok {
			return nil, false
		} else if !more {
			return a, true
		}
	}
}

// str reads a string at p.i (its opening quote); one with escapes or bytes
// that are not ASCII is decoded by encoding/json (which also replaces
// invalid UTF-8).
func (p *parser) str() (string, bool) {
	start := p.i
	plain, ok := p.scanStr()
	if !ok {
		return "", false
	}
	if plain {
		return p.b[start+1 : p.i-1], true
	}
	var s string
	if json.Unmarshal([]byte(p.b[start:p.i]), &s) != nil {
		return "", false
	}
	return s, true
}

// scanStr moves past a string at p.i (its opening quote) without decoding
// it; plain reports that it has neither escapes nor bytes that are not
// ASCII (its text is its value).
func (p *parser) scanStr() (plain, ok bool) {
	p.i++
	plain = true
	for {
		if p.i >= len(p.b) {
			return false, false
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			return plain, true
		case c == '\\':
			plain = false
			if p.i+1 >= len(p.b) {
				return false, false
			}
			switch p.b[p.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				p.i += 2
			case 'u':
				if len(p.b)-p.i < 6 || !isHex4(p.b[p.i+2:p.i+6]) {
					return false, false
				}
				p.i += 6
			default:
				return false, false
			}
		case c < 0x20:
			return false, false
		default:
			if c >= utf8.RuneSelf {
				plain = false
			}
			p.i++
		}
	}
}

func isHex4(s string) bool {
	for i := range 4 {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}

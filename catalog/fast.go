package catalog

import (
	"encoding/json"
	"math/big"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The fast path: the schema library's walk costs about 30 µs for a 1 KB
// payload (a scope, an evaluated-properties record and a copy of the
// instance location per value, and a big.Rat parsed from fmt.Sprint for
// every number compared), above the contract's 20 µs. A schema made only of
// the keywords below is also compiled into a [fastSchema], which checks a
// payload straight from its bytes, allocating nothing for plain strings.
// It answers only "valid" or "not sure": a payload it does not pass (an
// invalid one, or one it cannot judge) goes through the decoder and the
// library, which say its problems. It is never looser than the library
// (FuzzFastPathNeverLooser), only stricter where that is cheaper and rare:
// a key given twice has each of its values checked, a format on an object
// or an array sends it to the library. Numbers are compared exactly, as
// the library does, without big.Rat when both sides are small.
//
// Keywords it judges: type, const, enum (strings, numbers, booleans,
// null), format, minLength, maxLength, pattern, minimum, maximum,
// exclusiveMinimum, exclusiveMaximum, multipleOf, properties, required,
// additionalProperties, prefixItems, items, minItems, maxItems, $ref,
// allOf, anyOf and boolean schemas. Any other keyword in the schema (oneOf,
// not, if, patternProperties, unevaluatedProperties, ...) leaves the type
// without a fast path.

// fastSchema is a compiled schema's node with what the fast path needs
// precomputed.
type fastSchema struct {
	s *jsonschema.Schema
	// always is set for a boolean schema.
	always *bool
	// types is the type keyword's mask; 0: any type.
	types uint8
	// enum are const's or enum's values (string, bool, nil or *big.Rat);
	// hasEnum says there is one.
	enum    []any
	hasEnum bool

	props      map[string]*fastSchema
	required   map[string]uint64 // name: its bit
	allReq     uint64
	additional *fastSchema // nil: none (or false, see noAdditional)
	noAdd      bool        // additionalProperties: false

	prefix []*fastSchema
	items  *fastSchema

	ref          *fastSchema
	allOf, anyOf []*fastSchema
}

// The JSON types as fastSchema.types bits.
const (
	tNull uint8 = 1 << iota
	tBoolean
	tNumber
	tInteger
	tString
	tArray
	tObject
)

var typeBits = map[string]uint8{
	"null": tNull, "boolean": tBoolean, "number": tNumber, "integer": tInteger,
	"string": tString, "array": tArray, "object": tObject,
}

// compileFast returns the fast path of sch, or nil when sch uses a keyword
// it does not judge.
func compileFast(sch *jsonschema.Schema) *fastSchema {
	seen := map[*jsonschema.Schema]*fastSchema{}
	return fastOf(sch, seen)
}

func fastOf(s *jsonschema.Schema, seen map[*jsonschema.Schema]*fastSchema) *fastSchema {
	if s == nil {
		return nil
	}
	if f, ok := seen[s]; ok {
		return f // nil while a cycle's node is refused below
	}
	f := &fastSchema{s: s, always: s.Bool}
	seen[s] = f
	if !fastSupported(s) {
		seen[s] = nil
		return nil
	}
	ok := true
	sub := func(x *jsonschema.Schema) *fastSchema {
		if x == nil {
			return nil
		}
		fx := fastOf(x, seen)
		if fx == nil {
			ok = false
		}
		return fx
	}
	subs := func(xs []*jsonschema.Schema) []*fastSchema {
		var out []*fastSchema
		for _, x := range xs {
			out = append(out, sub(x))
		}
		return out
	}
	if s.Types != nil {
		for _, t := range s.Types.ToStrings() {
			f.types |= typeBits[t]
		}
	}
	if s.Const != nil {
		f.hasEnum = true
		f.enum, ok = enumValues([]any{*s.Const})
	}
	if s.Enum != nil && ok {
		f.hasEnum = true
		var vals []any
		vals, ok = enumValues(s.Enum.Values)
		if s.Const != nil {
			// Both: a value must be in each; keep const's and check enum's
			// on the slow path.
			ok = false
		}
		f.enum = vals
	}
	if len(s.Properties) > 0 {
		f.props = make(map[string]*fastSchema, len(s.Properties))
		for name, x := range s.Properties {
			f.props[name] = sub(x)
		}
	}
	if len(s.Required) > 64 {
		ok = false
	} else if len(s.Required) > 0 {
		f.required = make(map[string]uint64, len(s.Required))
		for i, name := range s.Required {
			f.required[name] |= 1 << i
			f.allReq |= 1 << i
		}
	}
	switch a := s.AdditionalProperties.(type) {
	case nil:
	case bool:
		f.noAdd = !a
	case *jsonschema.Schema:
		f.additional = sub(a)
	default:
		ok = false
	}
	f.prefix = subs(s.PrefixItems)
	f.items = sub(s.Items2020)
	f.ref = sub(s.Ref)
	f.allOf = subs(s.AllOf)
	f.anyOf = subs(s.AnyOf)
	if !ok {
		seen[s] = nil
		return nil
	}
	return f
}

// fastSupported reports whether s has only keywords the fast path judges.
func fastSupported(s *jsonschema.Schema) bool {
	return s.RecursiveRef == nil && s.DynamicRef == nil && s.Not == nil && s.OneOf == nil &&
		s.If == nil && s.Then == nil && s.Else == nil &&
		s.MaxProperties == nil && s.MinProperties == nil && s.PropertyNames == nil &&
		s.PatternProperties == nil && s.Dependencies == nil && s.DependentRequired == nil &&
		s.DependentSchemas == nil && s.UnevaluatedProperties == nil &&
		!s.UniqueItems && s.Contains == nil && s.MinContains == nil && s.MaxContains == nil &&
		s.Items == nil && s.AdditionalItems == nil && s.UnevaluatedItems == nil &&
		s.ContentEncoding == nil && s.ContentMediaType == nil && s.ContentSchema == nil &&
		s.Extensions == nil
}

// enumValues are vals as the fast path compares them: strings, booleans
// and null as they are, numbers as *big.Rat; ok false for an object or an
// array.
func enumValues(vals []any) ([]any, bool) {
	out := make([]any, 0, len(vals))
	for _, v := range vals {
		switch v := v.(type) {
		case nil, bool, string:
			out = append(out, v)
		case json.Number:
			r, ok := new(big.Rat).SetString(string(v))
			if !ok {
				return nil, false
			}
			out = append(out, r)
		default:
			return nil, false
		}
	}
	return out, true
}

// hop is a schema one value is being checked against, and the one whose
// $ref, allOf or anyOf led to it (nil: the value's first).
type hop struct {
	f  *fastSchema
	up *hop
}

// cycle reports whether f is already in the chain: a schema that, through
// $ref, allOf or anyOf, applies itself to the same value, which the library
// refuses (kind.RefCycle) and the fast path leaves to it.
func (h *hop) cycle(f *fastSchema) bool {
	for ; h != nil; h = h.up {
		if h.f == f {
			return true
		}
	}
	return false
}

// fastValid reports whether payload is certainly valid against f: a JSON
// document, nested at most maxDepth, that satisfies every keyword.
func fastValid(f *fastSchema, payload []byte) bool {
	c := checker{p: parser{b: string(payload)}}
	if !c.check(f, 0, nil) {
		return false
	}
	c.p.space()
	return c.p.i == len(c.p.b)
}

// checker reads a payload and checks it against a fastSchema.
type checker struct {
	p parser
}

// check reads the value at p.i and reports whether it satisfies f (nil:
// any value); up is the chain of schemas that led to f on the same value.
func (c *checker) check(f *fastSchema, depth int, up *hop) bool {
	p := &c.p
	p.space()
	if p.i >= len(p.b) {
		return false
	}
	if f == nil {
		return c.skip(depth)
	}
	if f.always != nil && !*f.always {
		return false
	}
	start := p.i
	var ok bool
	switch ch := p.b[p.i]; {
	case ch == '{':
		ok = depth < maxDepth && f.is(tObject) && !f.hasEnum && f.s.Format == nil && c.object(f, depth+1)
	case ch == '[':
		ok = depth < maxDepth && f.is(tArray) && !f.hasEnum && f.s.Format == nil && c.array(f, depth+1)
	case ch == '"':
		ok = c.str(f)
	case ch == 't':
		ok = p.literal("true") && f.scalar(tBoolean, true)
	case ch == 'f':
		ok = p.literal("false") && f.scalar(tBoolean, false)
	case ch == 'n':
		ok = p.literal("null") && f.scalar(tNull, nil)
	case ch == '-' || ch >= '0' && ch <= '9':
		ok = c.number(f)
	}
	if !ok {
		return false
	}
	if f.ref == nil && f.allOf == nil && f.anyOf == nil {
		return true
	}
	here := hop{f, up}
	end := p.i
	again := func(g *fastSchema) bool {
		if here.cycle(g) {
			return false
		}
		p.i = start
		return c.check(g, depth, &here) && p.i == end
	}
	if f.ref != nil && !again(f.ref) {
		return false
	}
	for _, g := range f.allOf {
		if !again(g) {
			return false
		}
	}
	if f.anyOf != nil {
		ok = false
		for _, g := range f.anyOf {
			if again(g) {
				ok = true
				break
			}
		}
	}
	p.i = end
	return ok
}

// is reports whether the type keyword allows type t (integer: a number
// that is an integer, which the caller checks).
func (f *fastSchema) is(t uint8) bool { return f.types == 0 || f.types&t != 0 }

// scalar checks a boolean or null v of type t.
func (f *fastSchema) scalar(t uint8, v any) bool {
	if !f.is(t) {
		return false
	}
	if f.hasEnum && !inEnum(f.enum, v) {
		return false
	}
	return f.s.Format == nil || f.s.Format.Validate(v) == nil
}

func inEnum(enum []any, v any) bool {
	for _, e := range enum {
		if e == v {
			return true
		}
	}
	return false
}

func (c *checker) str(f *fastSchema) bool {
	s := f.s
	if !f.is(tString) {
		return false
	}
	if !f.hasEnum && s.Format == nil && s.MinLength == nil && s.MaxLength == nil && s.Pattern == nil {
		_, ok := c.p.scanStr()
		return ok
	}
	v, ok := c.p.str()
	if !ok {
		return false
	}
	if f.hasEnum && !inEnum(f.enum, v) {
		return false
	}
	if s.MinLength != nil || s.MaxLength != nil {
		n := utf8.RuneCountInString(v)
		if s.MinLength != nil && n < *s.MinLength || s.MaxLength != nil && n > *s.MaxLength {
			return false
		}
	}
	if s.Pattern != nil && !s.Pattern.MatchString(v) {
		return false
	}
	return s.Format == nil || s.Format.Validate(v) == nil
}

func (c *checker) number(f *fastSchema) bool {
	lit, ok := c.p.numberLit()
	if !ok {
		return false
	}
	s := f.s
	switch {
	case f.types == 0 || f.types&tNumber != 0:
	case f.types&tInteger != 0:
		if !isIntegerLit(lit) {
			return false
		}
	default:
		return false
	}
	if f.hasEnum {
		found := false
		for _, e := range f.enum {
			if r, ok := e.(*big.Rat); ok && cmpLit(lit, r) == 0 {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if !inBounds(lit, s) {
		return false
	}
	if s.MultipleOf != nil {
		n, ok := new(big.Rat).SetString(lit)
		if !ok || !new(big.Rat).Quo(n, s.MultipleOf).IsInt() {
			return false
		}
	}
	return s.Format == nil || s.Format.Validate(json.Number(lit)) == nil
}

func (c *checker) object(f *fastSchema, depth int) bool {
	p := &c.p
	p.i++ // {
	var seen uint64
	p.space()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
		return seen == f.allReq
	}
	for {
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != '"' {
			return false
		}
		k, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return false
		}
		p.i++
		seen |= f.required[k]
		if g, ok := f.props[k]; ok {
			if !c.check(g, depth, nil) {
				return false
			}
		} else if f.noAdd {
			return false
		} else if !c.check(f.additional, depth, nil) {
			return false
		}
		if more, ok := p.next('}'); !ok {
			return false
		} else if !more {
			return seen == f.allReq
		}
	}
}

func (c *checker) array(f *fastSchema, depth int) bool {
	p := &c.p
	p.i++ // [
	n := 0
	s := f.s
	done := func() bool {
		return (s.MinItems == nil || n >= *s.MinItems) && (s.MaxItems == nil || n <= *s.MaxItems)
	}
	p.space()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		p.i++
		return done()
	}
	for {
		g := f.items
		if n < len(f.prefix) {
			g = f.prefix[n]
		}
		if !c.check(g, depth, nil) {
			return false
		}
		n++
		if more, ok := p.next(']'); !ok {
			return false
		} else if !more {
			return done()
		}
	}
}

// skip reads any value at p.i.
func (c *checker) skip(depth int) bool {
	p := &c.p
	switch ch := p.b[p.i]; {
	case ch == '{' || ch == '[':
		if depth >= maxDepth {
			return false
		}
		if ch == '{' {
			return c.object(&anyValue, depth+1)
		}
		return c.array(&anyValue, depth+1)
	case ch == '"':
		_, ok := p.scanStr()
		return ok
	case ch == 't':
		return p.literal("true")
	case ch == 'f':
		return p.literal("false")
	case ch == 'n':
		return p.literal("null")
	case ch == '-' || ch >= '0' && ch <= '9':
		_, ok := p.numberLit()
		return ok
	}
	return false
}

// anyValue is the empty schema, for skipping a value's members.
var anyValue = fastSchema{s: &jsonschema.Schema{}}

// maxSafeInt bounds the integer bounds compared without big.Rat.
const maxSafeInt = int64(1) << 53

// isIntegerLit reports whether the number lit is an integer, as the library
// decides it (exactly).
func isIntegerLit(lit string) bool {
	for i := 0; i < len(lit); i++ {
		switch lit[i] {
		case 'e', 'E':
			r, ok := new(big.Rat).SetString(lit)
			return ok && r.IsInt()
		case '.':
			for _, d := range []byte(lit[i+1:]) {
				if d == 'e' || d == 'E' {
					r, ok := new(big.Rat).SetString(lit)
					return ok && r.IsInt()
				}
				if d != '0' {
					return false
				}
			}
			return true
		}
	}
	return true
}

// inBounds reports whether the number lit satisfies s's minimum, maximum,
// exclusiveMinimum and exclusiveMaximum; false also when lit is beyond
// big.Rat (an exponent of billions), which the library cannot compare.
func inBounds(lit string, s *jsonschema.Schema) bool {
	ok := func(bound *big.Rat, want func(int) bool) bool {
		if bound == nil {
			return true
		}
		c := cmpLit(lit, bound)
		return c != unordered && want(c)
	}
	return ok(s.Minimum, func(c int) bool { return c >= 0 }) &&
		ok(s.Maximum, func(c int) bool { return c <= 0 }) &&
		ok(s.ExclusiveMinimum, func(c int) bool { return c > 0 }) &&
		ok(s.ExclusiveMaximum, func(c int) bool { return c < 0 })
}

// unordered is cmpLit's answer for a literal big.Rat cannot hold.
const unordered = 2

// cmpLit compares the number lit with r exactly: -1, 0 or +1 ([unordered]
// when big.Rat cannot hold lit). A literal
// without an exponent and of at most 15 integer digits against an integer
// bound below 2^53 is compared without allocating.
func cmpLit(lit string, r *big.Rat) int {
	if r.IsInt() && r.Num().IsInt64() {
		b := r.Num().Int64()
		if b > -maxSafeInt && b < maxSafeInt {
			if neg, ip, frac, ok := splitLit(lit); ok {
				if neg {
					return -cmpNonNeg(ip, frac, -b)
				}
				return cmpNonNeg(ip, frac, b)
			}
		}
	}
	n, ok := new(big.Rat).SetString(lit)
	if !ok {
		return unordered
	}
	return n.Cmp(r)
}

// splitLit reads a literal without an exponent as its sign, integer part
// and whether its fraction is not zero; ok false for anything else.
func splitLit(lit string) (neg bool, ip int64, frac bool, ok bool) {
	i := 0
	if lit[0] == '-' {
		neg = true
		i++
	}
	digits := 0
	for ; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
		ip = ip*10 + int64(lit[i]-'0')
		digits++
	}
	if digits > 15 {
		return false, 0, false, false
	}
	if i < len(lit) && lit[i] == '.' {
		for i++; i < len(lit) && lit[i] >= '0' && lit[i] <= '9'; i++ {
			if lit[i] != '0' {
				frac = true
			}
		}
	}
	if i != len(lit) {
		return false, 0, false, false // an exponent
	}
	return neg, ip, frac, true
}

// cmpNonNeg compares ip+f (0 <= f < 1, f > 0 when frac) with the integer b.
func cmpNonNeg(ip int64, frac bool, b int64) int {
	switch {
	case ip < b:
		return -1
	case ip > b || frac:
		return 1
	}
	return 0
}

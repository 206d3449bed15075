package catalog

import (
	"encoding/json"
	"errors"
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Problem is one reason a payload fails its type's schema.
type Problem struct {
	// Pointer is the JSON pointer (RFC 6901) of the offending value in the
	// payload: "/amount", "/items/0/sku"; "" for the payload itself.
	Pointer string
	// Reason says why: "want number, got string", "is required".
	Reason string
}

// String is the problem as the 422 answers say it: "/amount: want number,
// got string" ("(root): ..." for the payload itself).
func (p Problem) String() string {
	ptr := p.Pointer
	if ptr == "" {
		ptr = "(root)"
	}
	return ptr + ": " + p.Reason
}

// Join says every problem in one line, separated by "; ".
func Join(ps []Problem) string {
	var sb strings.Builder
	for i, p := range ps {
		if i > 0 {
			sb.WriteString("; ")
		}
		sb.WriteString(p.String())
	}
	return sb.String()
}

// Validate checks payload against the type's schema and returns every
// problem, ordered by pointer; nil when it is valid or the type has no
// schema. A payload that is not JSON is one problem at the root.
func (t *Type) Validate(payload []byte) []Problem {
	if t.schema == nil {
		return nil
	}
	if t.fast != nil && fastValid(t.fast, payload) {
		return nil
	}
	return t.full(payload)
}

// full is Validate without the fast path: the payload decoded and walked
// by the schema library, which says every problem.
func (t *Type) full(payload []byte) []Problem {
	v, err := decode(payload)
	if err != nil {
		return []Problem{{Reason: "not JSON: " + err.Error()}}
	}
	huge, err := t.validate(v)
	if huge != nil {
		return huge
	}
	if err == nil {
		return nil
	}
	ve, ok := errors.AsType[*jsonschema.ValidationError](err)
	if !ok {
		return []Problem{{Reason: err.Error()}}
	}
	ps := problems(ve, nil)
	slices.SortStableFunc(ps, func(a, b Problem) int { return strings.Compare(a.Pointer, b.Pointer) })
	return slices.Compact(ps)
}

// validate is the library's Validate, which dereferences a nil big.Rat
// (panics) when it compares a number big.Rat cannot hold
// (1e9999999999999999999) with a bound: such numbers are then the
// problems (every one in the payload: which of them the library was
// comparing is not known). Any other panic goes on.
func (t *Type) validate(v any) (huge []Problem, err error) {
	defer func() {
		if r := recover(); r != nil {
			huge = hugeNumbers(v, "", nil)
			if len(huge) == 0 {
				panic(r)
			}
		}
	}()
	return nil, t.schema.Validate(v)
}

// hugeNumbers appends to dst a problem for each number in v, at pointer
// ptr, that big.Rat cannot hold.
func hugeNumbers(v any, ptr string, dst []Problem) []Problem {
	switch v := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(v))
		for _, k := range keys {
			dst = hugeNumbers(v[k], ptr+"/"+escape(k), dst)
		}
	case []any:
		for i, x := range v {
			dst = hugeNumbers(x, ptr+"/"+strconv.Itoa(i), dst)
		}
	case json.Number:
		if _, ok := new(big.Rat).SetString(string(v)); !ok {
			dst = append(dst, Problem{ptr, "is a number too large to compare (" + string(v) + ")"})
		}
	}
	return dst
}

// printer says the library's messages in English.
var printer = message.NewPrinter(language.English)

// problems appends to dst the leaves of ve's tree, each a pointer and a
// reason.
func problems(ve *jsonschema.ValidationError, dst []Problem) []Problem {
	if len(ve.Causes) > 0 {
		for _, c := range ve.Causes {
			dst = problems(c, dst)
		}
		return dst
	}
	ptr := pointer(ve.InstanceLocation)
	switch k := ve.ErrorKind.(type) {
	case *kind.Type:
		return append(dst, Problem{ptr, "want " + strings.Join(k.Want, " or ") + ", got " + k.Got})
	case *kind.Required:
		for _, m := range k.Missing {
			dst = append(dst, Problem{ptr + "/" + escape(m), "is required"})
		}
		return dst
	case *kind.AdditionalProperties:
		for _, m := range k.Properties {
			dst = append(dst, Problem{ptr + "/" + escape(m), "is not allowed (no such property)"})
		}
		return dst
	case *kind.FalseSchema:
		return append(dst, Problem{ptr, "is not allowed"})
	}
	return append(dst, Problem{ptr, ve.ErrorKind.LocalizedString(printer)})
}

// pointer is the JSON pointer of the tokens.
func pointer(tokens []string) string {
	if len(tokens) == 0 {
		return ""
	}
	var sb strings.Builder
	for _, t := range tokens {
		sb.WriteByte('/')
		sb.WriteString(escape(t))
	}
	return sb.String()
}

// escape is a JSON pointer's token for a property name.
func escape(tok string) string {
	if !strings.ContainsAny(tok, "~/") {
		return tok
	}
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

package catalog

import (
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// fastSchemas are schemas the fast path judges, one or more keywords
// each; FuzzFastPathNeverLooser checks payloads against every one.
var fastSchemas = []string{
	orderSchema,
	fmt.Sprintf(operationalSchema, TypeDeadLetter),
	testSchema,
	`true`,
	`false`,
	`{}`,
	`{"type": "integer", "minimum": 1, "maximum": 10}`,
	`{"type": ["integer", "null"], "exclusiveMinimum": -3, "exclusiveMaximum": 3}`,
	`{"type": "number", "minimum": 0.5, "maximum": 1e3}`,
	`{"type": "number", "minimum": -9007199254740993, "maximum": 12345678901234567890}`,
	`{"multipleOf": 0.25}`,
	`{"enum": ["a", 1, 2.5, true, null]}`,
	`{"const": 10}`,
	`{"const": "x"}`,
	`{"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-zé]+$"}`,
	`{"format": "email"}`,
	`{"type": "string", "format": "date-time"}`,
	`{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"], "additionalProperties": false}`,
	`{"type": "object", "properties": {"a~/b": false}, "additionalProperties": {"type": "number"}}`,
	`{"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": false, "minItems": 1, "maxItems": 3}`,
	`{"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}`,
	`{"$defs": {"pos": {"type": "integer", "minimum": 1}}, "type": "object", "properties": {"n": {"$ref": "#/$defs/pos"}, "m": {"$ref": "#/$defs/pos", "maximum": 5}}}`,
	`{"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}}}}, "$ref": "#/$defs/node"}`,
	`{"allOf": [{"type": "number"}, {"minimum": 2}], "anyOf": [{"maximum": 3}, {"multipleOf": 5}]}`,
	`{"anyOf": [{"type": "string"}, {"type": "object", "required": ["k"]}]}`,
	`{"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"a": {"type": "integer", "exclusiveMinimum": 0}}, "required": ["a"]}`,
	`{"$schema": "http://json-schema.org/draft-04/schema#", "properties": {"a": {"minimum": 1, "exclusiveMinimum": true}}}`,
	`{"anyOf": [{"$ref": "#"}, {"type": "integer"}]}`,
}

// orderSchema is the benchmark's order.
const orderSchema = `{
  "type": "object",
  "required": ["id", "amount", "currency", "customer", "items", "placed_at"],
  "properties": {
    "id": {"type": "string", "minLength": 3},
    "amount": {"type": "number", "minimum": 0},
    "currency": {"enum": ["EUR", "USD"]},
    "placed_at": {"type": "string", "format": "date-time"},
    "customer": {
      "type": "object",
      "required": ["email", "name"],
      "properties": {
        "email": {"type": "string", "format": "email"},
        "name": {"type": "string"},
        "address": {"type": "object", "properties": {"line1": {"type": "string"}, "city": {"type": "string"}, "postcode": {"type": "string"}, "country": {"type": "string", "pattern": "^[A-Z]{2}$"}}}
      }
    },
    "items": {"type": "array", "items": {"type": "object", "required": ["sku", "qty"], "properties": {"sku": {"type": "string"}, "name": {"type": "string"}, "qty": {"type": "integer", "minimum": 1}, "price": {"type": "number"}}}},
    "metadata": {"type": "object", "additionalProperties": {"type": "string"}}
  }
}`

// fastPayloads seed the fuzz test and the table test: valid and invalid
// for one schema or another, numbers at the edges, broken JSON.
var fastPayloads = []string{
	`{"id":"ord_1","amount":0,"currency":"EUR","placed_at":"2026-12-07T10:00:00Z","customer":{"email":"a@b.c","name":"A","address":{"country":"GB"}},"items":[{"sku":"s","qty":1,"price":1.5}],"metadata":{"k":"v"}}`,
	`{"id":"ord_1","amount":-0.0001,"currency":"EUR","placed_at":"2026-12-07T10:00:00Z","customer":{"email":"a@b.c","name":"A"},"items":[]}`,
	`{"id":"ord_1","amount":1,"currency":"GBP","placed_at":"2026-12-07T10:00:00Z","customer":{"email":"a@b.c","name":"A"},"items":[{"sku":"s","qty":1.0},{"sku":"s","qty":0.5}]}`,
	`{"id":"o\u0072d","amount":1e2,"currency":"USD","placed_at":"2026-13-07T10:00:00Z","customer":{"email":"nope","name":"Zoë"},"items":[{"sku":"s","qty":1e0}],"metadata":{"k":1}}`,
	`{"type":"hookjet.dead_letter","endpoint":{"id":"crm","description":null},"tenant":null,"reason":"exhausted","count":1,"at":"2026-12-07T10:00:00Z"}`,
	`{"type":"hookjet.dead_letter","endpoint":{"id":"crm"},"count":-1,"at":"2026-12-07T10:00:00Z"}`,
	`{"type":"hookjet.test","endpoint":"crm","sent_at":"2026-12-07T10:00:00Z","type":"x"}`,
	`1`, `1.0`, `1.5`, `10`, `10.0000`, `11`, `-3`, `-2.9999`, `3`, `2.99`, `0.5`, `0.49`, `1e3`, `1000.0001`, `-0`, `-0.0`,
	`12345678901234567890`, `12345678901234567891`, `1e9999999999999999999`, `[-1e99999999999]`, `-9007199254740993`, `-9007199254740994`, `1e400`, `-1e-400`, `0.75`, `0.3`,
	`"a"`, `"ab"`, `"abcd"`, `"abcde"`, `"é"`, `"éé"`, `"a\u00e9"`, `"AB"`, `"x"`, `"a@b.c"`, `"a@"`, `true`, `false`, `null`,
	`2.5`, `25e-1`, `5`, `15`, `20`, `4`,
	`{"a":"x","b":1}`, `{"a":1,"b":1}`, `{"a":"x"}`, `{"a":"x","b":1,"c":2}`, `{"a":"x","a":1,"b":2}`, `{"a~/b":1}`, `{"z":1.5,"y":"n"}`,
	`["x",1]`, `["x",1,2]`, `[]`, `[1,"x"]`, `[[1,2],[3]]`, `[[1.5]]`, `[[1],"x"]`,
	`{"n":1,"m":5}`, `{"n":0}`, `{"m":6}`, `{"next":{"next":{"v":1}},"v":2}`, `{"next":{"v":"x"}}`,
	`{"k":1}`, `{"j":1}`, `{"a":1}`, `{"a":0}`, `{}`,
	`{`, `[1,]`, `nul`, "\"\xff\"", `01`, `1.`, `{"a":1}x`, ` {"a" : 1 } `, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
}

// FuzzFastPathNeverLooser checks that the fast path passes only payloads
// the schema library finds valid, for every schema in fastSchemas.
func FuzzFastPathNeverLooser(f *testing.F) {
	types := compileFastSchemas(f)
	for _, p := range fastPayloads {
		f.Add([]byte(p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for i, typ := range types {
			if fastValid(typ.fast, b) {
				if ps := typ.full(b); len(ps) > 0 {
					t.Fatalf("schema %d: fast path passed %q, the library: %s", i, b, Join(ps))
				}
			}
		}
	})
}

// TestFastPathAgrees checks the seed payloads both ways: the fast path
// passes exactly the payloads the library finds valid (so it is used, not
// only never looser), except where it is documented to be stricter.
func TestFastPathAgrees(t *testing.T) {
	types := compileFastSchemas(t)
	valid := 0
	for i, typ := range types {
		for _, p := range fastPayloads {
			fast := fastValid(typ.fast, []byte(p))
			full := len(typ.full([]byte(p))) == 0
			if fast && !full {
				t.Errorf("schema %d: fast path passed %q, the library did not", i, p)
			}
			if full && !fast && !stricter(fastSchemas[i], p) {
				t.Errorf("schema %d: the library passed %q, the fast path did not", i, p)
			}
			if full {
				valid++
			}
		}
	}
	if valid < 50 {
		t.Errorf("%d valid (schema, payload) pairs, want at least 50", valid)
	}
}

// stricter reports whether the fast path is documented to refuse payload
// p of schema s though the library passes it: a key given twice (each of
// its values is checked), a format on an object or an array.
func stricter(s, p string) bool {
	p = strings.TrimSpace(p)
	return strings.Contains(p, `"a":"x","a":1`) || strings.Contains(p, `"type":"x"`) ||
		s == `{"format": "email"}` && (strings.HasPrefix(p, "{") || strings.HasPrefix(p, "["))
}

func compileFastSchemas(tb testing.TB) []*Type {
	tb.Helper()
	var types []*Type
	for i, s := range fastSchemas {
		typ, err := Compile(Definition{Name: "t", Schema: json.RawMessage(s)})
		if err != nil {
			tb.Fatalf("schema %d: %v", i, err)
		}
		if typ.fast == nil {
			tb.Fatalf("schema %d has no fast path: %s", i, s)
		}
		types = append(types, typ)
	}
	return types
}

// TestNoFastPath checks that a schema with a keyword the fast path does
// not judge has none, and is still validated.
func TestNoFastPath(t *testing.T) {
	for _, tt := range []struct{ schema, invalid string }{
		{`{"oneOf": [{"type": "string"}, {"minLength": 1}]}`, `"x"`},
		{`{"not": {"type": "string"}}`, `"x"`},
		{`{"if": {"type": "string"}, "then": {"minLength": 2}}`, `"x"`},
		{`{"patternProperties": {"^a": {"type": "string"}}}`, `{"a":1}`},
		{`{"unevaluatedProperties": false, "allOf": [{"properties": {"a": true}}]}`, `{"b":1}`},
		{`{"minProperties": 2}`, `{"a":1,"a":2}`},
		{`{"uniqueItems": true}`, `[1,1.0]`},
		{`{"contains": {"type": "string"}}`, `[1]`},
		{`{"enum": [{"a": 1}]}`, `{"a":2}`},
		{`{"const": 1, "enum": [1, 2]}`, `2`},
		{`{"properties": {"a": {"oneOf": [true, true]}}}`, `{"a":1}`},
		{`{"$schema": "http://json-schema.org/draft-07/schema#", "items": {"type": "string"}}`, `[1]`},
	} {
		t.Run(tt.schema, func(t *testing.T) {
			typ, err := Compile(Definition{Name: "t", Schema: json.RawMessage(tt.schema)})
			if err != nil {
				t.Fatal(err)
			}
			if typ.fast != nil {
				t.Error("has a fast path")
			}
			if ps := typ.Validate([]byte(tt.invalid)); len(ps) == 0 {
				t.Errorf("%s passed", tt.invalid)
			}
		})
	}
}

func TestCmpLit(t *testing.T) {
	for _, tt := range []struct {
		lit, bound string
		want       int
	}{
		{"0", "0", 0}, {"-0", "0", 0}, {"-0.0", "0", 0}, {"0.0001", "0", 1}, {"-0.0001", "0", -1},
		{"5", "5", 0}, {"5.1", "5", 1}, {"4.9", "5", -1}, {"-5", "-5", 0}, {"-5.1", "-5", -1}, {"-4.9", "-5", 1},
		{"999999999999999", "1", 1}, {"1234567890123456", "1", 1}, {"1e2", "100", 0}, {"1.5", "3/2", 0}, {"1.4", "3/2", -1},
		{"-9007199254740993", "-9007199254740992", -1}, {"12345678901234567890", "12345678901234567891", -1},
	} {
		r, ok := new(big.Rat).SetString(tt.bound)
		if !ok {
			t.Fatal(tt.bound)
		}
		if got := cmpLit(tt.lit, r); got != tt.want {
			t.Errorf("cmpLit(%s, %s) = %d, want %d", tt.lit, tt.bound, got, tt.want)
		}
	}
}

// TestFastPathRefCycle checks that a schema applying itself to the same
// value through $ref ends, refused as the library refuses it, however
// many ways the cycle branches.
func TestFastPathRefCycle(t *testing.T) {
	for _, s := range []string{
		`{"$ref": "#"}`,
		`{"anyOf": [{"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}]}`,
		`{"$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}, {"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}`,
	} {
		typ, err := Compile(Definition{Name: "t", Schema: json.RawMessage(s)})
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if typ.fast == nil {
			t.Fatalf("%s: no fast path", s)
		}
		if fastValid(typ.fast, []byte(`{"a":1}`)) {
			t.Errorf("%s: fast path passed", s)
		}
		if ps := typ.Validate([]byte(`{"a":1}`)); len(ps) == 0 {
			t.Errorf("%s: valid", s)
		}
	}
}

// TestFastPathKnowsEveryKeyword fails when the schema library's Schema
// gains a field (a new version of it): fastSupported must then refuse or
// judge the keyword before the fast path can be trusted again.
func TestFastPathKnowsEveryKeyword(t *testing.T) {
	known := map[string]bool{}
	for _, f := range strings.Fields(`DraftVersion Location Bool ID Ref Anchor RecursiveRef RecursiveAnchor
		DynamicRef DynamicAnchor Types Enum Const Not AllOf AnyOf OneOf If Then Else Format
		MaxProperties MinProperties Required PropertyNames Properties PatternProperties
		AdditionalProperties Dependencies DependentRequired DependentSchemas UnevaluatedProperties
		MinItems MaxItems UniqueItems Contains MinContains MaxContains Items AdditionalItems
		PrefixItems Items2020 UnevaluatedItems MinLength MaxLength Pattern ContentEncoding
		ContentMediaType ContentSchema Maximum Minimum ExclusiveMaximum ExclusiveMinimum MultipleOf
		Extensions Title Description Default Comment ReadOnly WriteOnly Examples Deprecated`) {
		known[f] = true
	}
	for f := range reflect.TypeFor[jsonschema.Schema]().Fields() {
		if f.IsExported() && !known[f.Name] {
			t.Errorf("jsonschema.Schema.%s: unknown to the fast path (fast.go)", f.Name)
		}
	}
}

// TestHugeNumber checks a number big.Rat cannot hold: the library panics
// comparing it with a bound, so it is the problem, named by its pointer;
// under no bound it is valid, and the fast path never passes it against
// one.
func TestHugeNumber(t *testing.T) {
	typ, err := Compile(Definition{Name: "t", Schema: json.RawMessage(
		`{"properties": {"a": {"maximum": 5}, "b": {"minimum": 5}, "c": {"type": "number"}, "d": {"multipleOf": 2}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	huge := "1e9999999999999999999"
	for _, tt := range []struct{ payload, want string }{
		{`{"a":` + huge + `}`, "/a: is a number too large to compare (" + huge + ")"},
		{`{"b":-` + huge + `}`, "/b: is a number too large to compare (-" + huge + ")"},
		{`{"c":` + huge + `}`, ""},
		{`{"d":` + huge + `,"c":` + huge + `}`, "/c: is a number too large to compare (" + huge + "); /d: is a number too large to compare (" + huge + ")"},
	} {
		if fastValid(typ.fast, []byte(tt.payload)) && tt.want != "" {
			t.Errorf("%s: fast path passed", tt.payload)
		}
		if got := Join(typ.Validate([]byte(tt.payload))); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.payload, got, tt.want)
		}
	}
}

package catalog_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hookjet/hookjet/catalog"
)

const orderSchema = `{
  "type": "object",
  "required": ["id", "amount", "customer"],
  "properties": {
    "id": {"type": "string", "minLength": 3},
    "amount": {"type": "number", "minimum": 0},
    "currency": {"enum": ["EUR", "USD"]},
    "customer": {
      "type": "object",
      "required": ["email"],
      "properties": {"email": {"type": "string", "format": "email"}, "a/b": {"type": "integer"}}
    },
    "items": {"type": "array", "items": {"type": "object", "required": ["sku"], "properties": {"sku": {"type": "string"}}}},
    "placed_at": {"type": "string", "format": "date-time"}
  },
  "additionalProperties": false
}`

func order(t testing.TB) *catalog.Type {
	t.Helper()
	typ, err := catalog.Compile(catalog.Definition{Name: "order.created", Schema: json.RawMessage(orderSchema)})
	if err != nil {
		t.Fatal(err)
	}
	return typ
}

func TestValidateNamesEachPointerAndWhy(t *testing.T) {
	typ := order(t)
	tests := []struct {
		name, payload string
		want          []string
	}{
		{"valid", `{"id":"o-1","amount":12.5,"customer":{"email":"a@example.com"},"items":[{"sku":"x"}],"placed_at":"2026-12-07T10:00:00Z"}`, nil},
		{"number as string", `{"id":"o-1","amount":"12","customer":{"email":"a@example.com"}}`, []string{"/amount: want number, got string"}},
		{"below minimum", `{"id":"o-1","amount":-1,"customer":{"email":"a@example.com"}}`, []string{"/amount: minimum: got -1, want 0"}},
		{"short string", `{"id":"o","amount":1,"customer":{"email":"a@example.com"}}`, []string{"/id: minLength: got 1, want 3"}},
		{"enum", `{"id":"o-1","amount":1,"currency":"GBP","customer":{"email":"a@example.com"}}`, []string{`/currency: value must be one of 'EUR', 'USD'`}},
		{"required at the root and nested", `{"amount":1,"customer":{}}`, []string{"/customer/email: is required", "/id: is required"}},
		{"nested in an array", `{"id":"o-1","amount":1,"customer":{"email":"a@example.com"},"items":[{"sku":"x"},{"sku":7}]}`, []string{"/items/1/sku: want string, got number"}},
		{"format email", `{"id":"o-1","amount":1,"customer":{"email":"not-an-email"}}`, []string{"/customer/email: 'not-an-email' is not valid email: missing @"}},
		{"format date-time", `{"id":"o-1","amount":1,"customer":{"email":"a@example.com"},"placed_at":"yesterday"}`, []string{"/placed_at: 'yesterday' is not valid date-time: less than 20 characters long"}},
		{"pointer escapes", `{"id":"o-1","amount":1,"customer":{"email":"a@example.com","a/b":"x"}}`, []string{"/customer/a~1b: want integer, got string"}},
		{"unknown property", `{"id":"o-1","amount":1,"customer":{"email":"a@example.com"},"extra":1}`, []string{"/extra: is not allowed (no such property)"}},
		{"every problem at once", `{"id":1,"amount":"x"}`, []string{"/amount: want number, got string", "/customer: is required", "/id: want string, got number"}},
		{"root of the wrong type", `"hello"`, []string{"(root): want object, got string"}},
		{"not JSON", `{"id":`, []string{"(root): not JSON: unexpected end of JSON input"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, p := range typ.Validate([]byte(tt.payload)) {
				got = append(got, p.String())
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Validate(%s):\n got %q\nwant %q", tt.payload, got, tt.want)
			}
		})
	}
}

func TestCompileRefusesBadDefinitionsNamingTheField(t *testing.T) {
	tests := []struct {
		name  string
		def   catalog.Definition
		field string
		msg   string
	}{
		{"no name", catalog.Definition{}, "name", "name: is required"},
		{"wildcard name", catalog.Definition{Name: "order.*"}, "name", "no wildcards"},
		{"empty token", catalog.Definition{Name: "order..created"}, "name", "empty token"},
		{"schema not JSON", catalog.Definition{Name: "a", Schema: json.RawMessage(`{"type":`)}, "schema", "schema: not JSON"},
		{"schema a number", catalog.Definition{Name: "a", Schema: json.RawMessage(`7`)}, "schema", "must be a JSON object"},
		{"unknown type keyword value", catalog.Definition{Name: "a", Schema: json.RawMessage(`{"type":"strng"}`)}, "schema", "schema: /type"},
		{"minimum not a number", catalog.Definition{Name: "a", Schema: json.RawMessage(`{"properties":{"n":{"minimum":"x"}}}`)}, "schema", "/properties/n/minimum: want number, got string"},
		{"bad pattern", catalog.Definition{Name: "a", Schema: json.RawMessage(`{"pattern":"("}`)}, "schema", "schema: "},
		{"ref outside", catalog.Definition{Name: "a", Schema: json.RawMessage(`{"$ref":"https://example.com/s.json"}`)}, "schema", "may only refer within itself"},
		{"example fails", catalog.Definition{Name: "a", Schema: json.RawMessage(`{"type":"object","required":["n"]}`), Examples: []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{}`)}}, "examples[1]", "examples[1]: fails the schema: /n: is required"},
		{"example not JSON", catalog.Definition{Name: "a", Examples: []json.RawMessage{json.RawMessage(`{`)}}, "examples[0]", "examples[0]: not JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := catalog.Compile(tt.def)
			fe, ok := errors.AsType[*catalog.FieldError](err)
			if !ok {
				t.Fatalf("Compile: %v, want a *FieldError", err)
			}
			if fe.Field != tt.field || !strings.Contains(err.Error(), tt.msg) || !errors.Is(err, catalog.ErrInvalid) {
				t.Errorf("Compile: field %q, %q; want field %q and %q", fe.Field, err, tt.field, tt.msg)
			}
		})
	}
}

func TestCheckFollowsModeAndStrict(t *testing.T) {
	typ := order(t)
	bad := []byte(`{"amount":"x"}`)
	for _, tt := range []struct {
		mode             catalog.Mode
		strict           bool
		typ              string
		unknown, invalid bool
	}{
		{catalog.Off, false, "order.created", false, false},
		{catalog.Warn, false, "order.created", false, true},
		{catalog.Enforce, false, "order.created", false, true},
		{catalog.Enforce, false, "lead.created", false, false},
		{catalog.Off, true, "lead.created", true, true},
		{catalog.Enforce, true, catalog.TypeDeadLetter, false, true},
	} {
		c := catalog.New(tt.mode, tt.strict, []*catalog.Type{typ}, nil)
		v := c.Check(tt.typ, bad)
		if v.Unknown != tt.unknown || v.Invalid() != tt.invalid {
			t.Errorf("%v strict=%v %s: %+v, want unknown %v invalid %v", tt.mode, tt.strict, tt.typ, v, tt.unknown, tt.invalid)
		}
	}
}

func TestOwnFileTypesWinOverStoredOnesAndBuiltinsOverBoth(t *testing.T) {
	api, _ := catalog.Compile(catalog.Definition{Name: "order.created", Description: "api"})
	file, _ := catalog.Compile(catalog.Definition{Name: "order.created", Description: "file"})
	fake, _ := catalog.Compile(catalog.Definition{Name: catalog.TypeDeadLetter, Description: "mine"})
	c := catalog.New(catalog.Warn, false, []*catalog.Type{file}, []catalog.Entry{{Type: api, Source: catalog.SourceAPI}, {Type: fake, Source: catalog.SourceAPI}})
	if e, _ := c.Lookup("order.created"); e.Source != catalog.SourceConfig || e.Definition().Description != "file" {
		t.Errorf("order.created: %v %q, want the file's", e.Source, e.Definition().Description)
	}
	if e, _ := c.Lookup(catalog.TypeDeadLetter); e.Source != catalog.SourceBuiltin {
		t.Errorf("%s: %v, want builtin", catalog.TypeDeadLetter, e.Source)
	}
	if n := len(catalog.Builtin()); c.Len() != n+1 {
		t.Errorf("Len = %d, want %d", c.Len(), n+1)
	}
}

func TestBuiltinOperationalTypesAcceptTheirPayload(t *testing.T) {
	c := catalog.New(catalog.Enforce, true, nil, nil)
	for _, name := range []string{catalog.TypeEndpointDisabled, catalog.TypeEndpointEnabled, catalog.TypeEndpointBreakerOpened, catalog.TypeEndpointBreakerClosed, catalog.TypeDeadLetter} {
		payload := fmt.Sprintf(`{"type":%q,"endpoint":{"id":"crm","description":""},"tenant":"","reason":"gone","count":3,"at":"2026-12-07T10:00:00Z"}`, name)
		if v := c.Check(name, []byte(payload)); v.Invalid() {
			t.Errorf("%s: %s", name, v.Reason())
		}
		if v := c.Check(name, []byte(`{"type":"other","endpoint":{"id":"crm"},"at":"2026-12-07T10:00:00Z"}`)); !v.Invalid() {
			t.Errorf("%s accepts another type's payload", name)
		}
	}
}

func TestLiveSwapsWholeCatalogues(t *testing.T) {
	var nilLive *catalog.Live
	if m := nilLive.Load().Mode(); m != catalog.Off {
		t.Fatalf("nil Live: mode %v, want off", m)
	}
	l := catalog.NewLive(catalog.New(catalog.Off, false, nil, nil))
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				c := l.Load()
				if c.Mode() == catalog.Enforce && !c.Strict() {
					t.Error("a reader saw half a change")
					return
				}
			}
		})
	}
	for range 100 {
		l.Store(catalog.New(catalog.Enforce, true, nil, nil))
		l.Store(catalog.New(catalog.Off, false, nil, nil))
	}
	wg.Wait()
}

func TestParseMode(t *testing.T) {
	for _, m := range []catalog.Mode{catalog.Off, catalog.Warn, catalog.Enforce} {
		if got, err := catalog.ParseMode(m.String()); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := catalog.ParseMode("strict"); err == nil || !strings.Contains(err.Error(), "off, warn or enforce") {
		t.Errorf("ParseMode(strict): %v", err)
	}
}

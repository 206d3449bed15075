package catalog_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/catalog"
)

// benchSchema is an order's schema: nested objects, an array of items,
// formats, an enum, integers with bounds.
const benchSchema = `{
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

// payload1K is a valid order of about 1 KB with n items.
func payload1K(b *testing.B, n int) []byte {
	b.Helper()
	var items []string
	for i := range n {
		items = append(items, fmt.Sprintf(`{"sku":"SKU-%04d","name":"Item %d","qty":%d,"price":%d.99}`, i, i, i+1, 10+i))
	}
	p := `{"id":"ord_0001","amount":1234.5,"currency":"EUR","placed_at":"2026-12-07T10:00:00Z",` +
		`"customer":{"email":"ada@example.com","name":"Ada Lovelace","address":{"line1":"12 St James's Square","city":"London","postcode":"SW1Y 4JH","country":"GB"}},` +
		`"items":[` + strings.Join(items, ",") + `],"metadata":{"channel":"web","campaign":"winter-sale","note":"`
	p += strings.Repeat("x", max(0, 1022-len(p))) + `"}}`
	return []byte(p)
}

// BenchmarkValidate1K validates a 1 KB order (DESIGN: <= 20 us): typical
// has 3 items (4 numbers each way), numbers has 10 (every item's integer
// and bound checked); both pass the fast path. invalid is typical with its
// last item's qty 0: the fast path reads it all, then the decoder and the
// library say the problem.
func BenchmarkValidate1K(b *testing.B) {
	typ, err := catalog.Compile(catalog.Definition{Name: "order.created", Schema: json.RawMessage(benchSchema)})
	if err != nil {
		b.Fatal(err)
	}
	c := catalog.New(catalog.Enforce, false, []*catalog.Type{typ}, nil)
	for _, bc := range []struct {
		name  string
		items int
	}{{"typical", 3}, {"numbers", 10}} {
		b.Run(bc.name, func(b *testing.B) {
			p := payload1K(b, bc.items)
			if v := c.Check("order.created", p); v.Invalid() {
				b.Fatal(v.Reason())
			}
			if !typ.OnFastPath(p) {
				b.Fatal("not on the fast path")
			}
			b.SetBytes(int64(len(p)))
			b.ReportAllocs()
			for b.Loop() {
				if c.Check("order.created", p).Invalid() {
					b.Fatal("invalid")
				}
			}
		})
	}
	b.Run("invalid", func(b *testing.B) {
		p := bytes.Replace(payload1K(b, 3), []byte(`"qty":3`), []byte(`"qty":0`), 1)
		want := "/items/2/qty: minimum: got 0, want 1"
		if v := c.Check("order.created", p); v.Reason() != want {
			b.Fatalf("got %q, want %q", v.Reason(), want)
		}
		b.SetBytes(int64(len(p)))
		b.ReportAllocs()
		for b.Loop() {
			if !c.Check("order.created", p).Invalid() {
				b.Fatal("valid")
			}
		}
	})
}

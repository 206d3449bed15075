package filter_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/filter"
)

func order() filter.Input {
	return filter.Input{
		Type:    "order.created",
		ID:      "evt_1",
		Tenant:  "acme",
		Key:     "order-7",
		Headers: map[string][]string{"X-Region": {"eu"}, "Hookjet-Tenant": {"acme"}},
		Data:    []byte(`{"amount": 1500, "currency": "EUR", "flag": true, "customer": {"tier": "gold", "tags": ["vip", "beta"]}, "n": null}`),
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		expr string
		want bool
	}{
		{`data.amount > 1000 && data.currency == "EUR"`, true},
		{`data.amount > 1000.0`, true},
		{`data.amount == 1500`, true},
		{`data.amount < 100`, false},
		{`data.currency == "USD"`, false},
		{`data.customer.tier == "gold"`, true},
		{`data.customer.tags.size() == 2`, true},
		{`has(data.customer.tier)`, true},
		{`has(data.missing)`, false},
		{`data.?missing.orValue("") == ""`, true},
		{`data.?customer.?tier.orValue("none") == "gold"`, true},
		{`data.flag == true`, true},
		{`data.n == null`, true},
		{`headers["x-region"] == "eu"`, true},
		{`"x-region" in headers`, true},
		{`headers["hookjet-tenant"] == tenant`, true},
		{`tenant == "acme"`, true},
		{`tenant == "globex"`, false},
		{`type.startsWith("order.")`, true},
		{`id == "evt_1" && key == "order-7"`, true},
		{`type.matches("^order[.]")`, true},
		// Linear in the payload: accepted under a smaller payload bound.
		{`"vip" in data.customer.tags`, true},
		{`data.currency.matches("^E")`, true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			f, err := filter.Compile(tt.expr, filter.Options{MaxPayloadBytes: 8 << 10})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := f.Match(filter.NewEvent(order(), filter.Limits{}))
			if err != nil {
				t.Fatalf("Match: %v", err)
			}
			if got != tt.want {
				t.Fatalf("Match = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMatchErrorIsNoMatch(t *testing.T) {
	tests := []struct {
		name string
		expr string
		in   filter.Input
	}{
		{"missing field", `data.missing == 1`, order()},
		{"type mismatch", `data.currency > 3`, order()},
		{"payload not JSON", `data.amount > 1`, filter.Input{Type: "t", Data: []byte("plain text")}},
		{"missing header", `headers["x-none"] == "a"`, order()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := filter.Compile(tt.expr, filter.Options{})
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := f.Match(filter.NewEvent(tt.in, filter.Limits{}))
			if got {
				t.Fatal("an evaluation error matched")
			}
			if !errors.Is(err, filter.ErrEval) {
				t.Fatalf("err = %v, want ErrEval", err)
			}
		})
	}
}

func TestNotJSONIsNull(t *testing.T) {
	f, err := filter.Compile(`data == null && type == "t"`, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ok, err := f.Match(filter.NewEvent(filter.Input{Type: "t", Data: []byte("<xml/>")}, filter.Limits{}))
	if err != nil || !ok {
		t.Fatalf("Match = %v, %v; want true", ok, err)
	}
}

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name       string
		expr       string
		line, col  int
		wantReason string
	}{
		{"syntax", `data.amount >`, 1, 14, "Syntax error"},
		{"syntax on line 2", "data.amount > 1 &&\n  data.currency = \"EUR\"", 2, 17, "Syntax error"},
		{"unknown variable", `amount > 1`, 1, 1, "undeclared reference to 'amount'"},
		{"not bool", `data.amount + 1`, 1, 1, "not bool"},
		{"dyn", `data.flag`, 1, 1, "data.flag == true"},
		{"string", `type`, 1, 1, "yields string, not bool"},
		{"cost", `data.items.all(x, data.items.all(y, x == y))`, 1, 1, "estimated cost"},
		{"linear in a 1 MiB payload", `"vip" in data.tags`, 1, 1, "estimated cost 1048578 is over 10000 (with payloads up to 1048576 bytes)"},
		{"empty", `  `, 1, 1, "is empty"},
		{"too long", strings.Repeat("true && ", 600) + "true", 1, 1, "bytes, more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := filter.Compile(tt.expr, filter.Options{})
			if !errors.Is(err, filter.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			var ce *filter.CompileError
			if !errors.As(err, &ce) {
				t.Fatalf("err %T is not a *CompileError", err)
			}
			if ce.Line != tt.line || ce.Column != tt.col {
				t.Errorf("position %d:%d, want %d:%d (%v)", ce.Line, ce.Column, tt.line, tt.col, err)
			}
			if !strings.Contains(ce.Reason, tt.wantReason) {
				t.Errorf("reason %q lacks %q", ce.Reason, tt.wantReason)
			}
			prefix := fmt.Sprintf("filter: %d:%d: ", ce.Line, ce.Column)
			if !strings.HasPrefix(err.Error(), prefix) {
				t.Errorf("message %q does not start with %q", err, prefix)
			}
		})
	}
}

func TestEstimatedCostOfTypicalFilters(t *testing.T) {
	for _, expr := range []string{
		`data.amount > 1000 && data.currency == "EUR"`,
		`has(data.customer) && data.customer.tier == "gold"`,
		`headers["x-region"] == "eu" || tenant == "acme"`,
		`data.?customer.?tier.orValue("") == "gold"`,
		`type.startsWith("order.")`,
	} {
		f, err := filter.Compile(expr, filter.Options{})
		if err != nil {
			t.Errorf("%s: %v", expr, err)
			continue
		}
		t.Logf("%s: estimated %d", expr, f.EstimatedCost())
	}
}

func TestCostLimit(t *testing.T) {
	// Accepted with a small payload bound, stopped on a payload past it.
	expr := `data.items.exists(x, x == 7)`
	f, err := filter.Compile(expr, filter.Options{MaxPayloadBytes: 100, Cost: 50})
	if err != nil {
		t.Fatal(err)
	}
	items := make([]string, 500)
	for i := range items {
		items[i] = "1"
	}
	in := filter.Input{Data: []byte(`{"items": [` + strings.Join(items, ",") + `]}`)}
	ok, err := f.Match(filter.NewEvent(in, filter.Limits{}))
	if ok || !errors.Is(err, filter.ErrCostLimit) {
		t.Fatalf("Match = %v, %v; want no match, ErrCostLimit", ok, err)
	}
}

func TestBudgetPerEvent(t *testing.T) {
	ev := filter.NewEvent(order(), filter.Limits{Budget: 20})
	var matched, refused int
	for i := range 100 {
		f, err := filter.Compile(fmt.Sprintf(`data.amount > %d.0 && data.currency == "EUR"`, i), filter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ok, err := f.Match(ev)
		switch {
		case ok:
			matched++
		case errors.Is(err, filter.ErrBudget):
			refused++
		default:
			t.Fatalf("Match = %v, %v", ok, err)
		}
	}
	if matched == 0 || matched > 20 || refused != 100-matched {
		t.Fatalf("matched %d, refused %d: the budget of 20 did not stop the evaluations", matched, refused)
	}
	if !ev.Spent() {
		t.Fatal("Spent = false after the budget ran out")
	}
}

func TestSameExpressionEvaluatedOncePerEvent(t *testing.T) {
	const expr = `data.amount > 1000 && data.currency == "EUR"`
	first, err := filter.Compile(expr, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A budget of one evaluation: what the first filter spends leaves
	// nothing for another expression, but its twins read its outcome.
	ev := filter.NewEvent(order(), filter.Limits{Budget: 1})
	if ok, err := first.Match(ev); !ok || err != nil {
		t.Fatalf("first Match = %v, %v", ok, err)
	}
	for range 3 {
		twin, err := filter.Compile(expr, filter.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := twin.Match(ev); !ok || err != nil {
			t.Fatalf("the same expression on another endpoint: Match = %v, %v; want its first outcome", ok, err)
		}
	}
	other, err := filter.Compile(`data.amount > 1.0`, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := other.Match(ev); ok || !errors.Is(err, filter.ErrBudget) {
		t.Fatalf("another expression after the budget ran out: Match = %v, %v; want ErrBudget", ok, err)
	}
	missing, err := filter.Compile(`data.nope == 1.0`, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev = filter.NewEvent(order(), filter.Limits{})
	for range 2 {
		if ok, err := missing.Match(ev); ok || !errors.Is(err, filter.ErrEval) {
			t.Fatalf("a failing expression, evaluated or remembered: Match = %v, %v; want ErrEval", ok, err)
		}
	}
}

func TestPayloadParsedOnce(t *testing.T) {
	ev := filter.NewEvent(order(), filter.Limits{})
	noData, err := filter.Compile(`type == "order.created"`, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := noData.Match(ev); !ok || err != nil {
		t.Fatalf("Match = %v, %v", ok, err)
	}
	if n := ev.Parses(); n != 0 {
		t.Fatalf("a filter that does not read data parsed the payload %d times", n)
	}
	withData, err := filter.Compile(`data.amount > 1`, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		if ok, err := withData.Match(ev); !ok || err != nil {
			t.Fatalf("Match = %v, %v", ok, err)
		}
	}
	if n := ev.Parses(); n != 1 {
		t.Fatalf("1,000 filters parsed the payload %d times, want 1", n)
	}
}

func TestConcurrentMatch(t *testing.T) {
	f, err := filter.Compile(`data.customer.tier == "gold" && headers["x-region"] == "eu"`, filter.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ev := filter.NewEvent(order(), filter.Limits{})
	done := make(chan error)
	for range 8 {
		go func() {
			for range 100 {
				if ok, err := f.Match(ev); !ok || err != nil {
					done <- fmt.Errorf("Match = %v, %w", ok, err)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if ev.Parses() != 1 {
		t.Fatalf("parsed %d times", ev.Parses())
	}
}

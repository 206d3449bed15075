package routing

import (
	"slices"
	"strconv"
	"testing"
)

// An endpoint with a tenant is matched only by that tenant's events; one
// without a tenant by every event its patterns match; an event without a
// tenant only by endpoints without one.
func TestIndexMatchesByTenant(t *testing.T) {
	x := newIndex()
	x.set("ops", "", []string{">"})
	x.set("ops-orders", "", []string{"order.*"})
	x.set("acme-crm", "acme", []string{"order.*"})
	x.set("globex-crm", "globex", []string{"order.*"})
	x.set("globex-all", "globex", []string{">"})
	for _, tt := range []struct {
		tenant, typ string
		want        []string
	}{
		{"acme", "order.created", []string{"acme-crm", "ops", "ops-orders"}},
		{"globex", "order.created", []string{"globex-all", "globex-crm", "ops", "ops-orders"}},
		{"globex", "invoice.paid", []string{"globex-all", "ops"}},
		{"", "order.created", []string{"ops", "ops-orders"}},
		{"", "invoice.paid", []string{"ops"}},
		{"initech", "order.created", []string{"ops", "ops-orders"}}, // a tenant without endpoints
	} {
		t.Run(tt.tenant+"/"+tt.typ, func(t *testing.T) {
			got := x.match(tt.tenant, tt.typ, nil)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("match(%q, %q) = %v, want %v", tt.tenant, tt.typ, got, tt.want)
			}
		})
	}
}

// hookjet's own event types reach only the endpoints whose patterns name
// "hookjet", of the event's tenant and the operator's, never through > or
// *.* or a pattern starting with a wildcard.
func TestIndexMatchesHookjetTypesOnlyByName(t *testing.T) {
	x := newIndex()
	x.set("ops-all", "", []string{">"})
	x.set("ops-two", "", []string{"*.*", "*.endpoint.*", "*.>"})
	x.set("ops-hookjet", "", []string{"hookjet.>"})
	x.set("ops-endpoint", "", []string{"hookjet.endpoint.*"})
	x.set("acme-hookjet", "acme", []string{"hookjet.dead_letter", "order.*"})
	x.set("acme-all", "acme", []string{">"})
	x.set("globex-hookjet", "globex", []string{"hookjet.>"})
	for _, tt := range []struct {
		tenant, typ string
		want        []string
	}{
		{"acme", "hookjet.endpoint.disabled", []string{"ops-endpoint", "ops-hookjet"}},
		{"acme", "hookjet.dead_letter", []string{"acme-hookjet", "ops-hookjet"}},
		{"", "hookjet.dead_letter", []string{"ops-hookjet"}},
		{"globex", "hookjet.endpoint.breaker_opened", []string{"globex-hookjet", "ops-endpoint", "ops-hookjet"}},
		{"acme", "order.created", []string{"acme-all", "acme-hookjet", "ops-all", "ops-two"}},
		{"", "hookjet", []string{"ops-all"}}, // no "hookjet." prefix: an ordinary type
	} {
		t.Run(tt.tenant+"/"+tt.typ, func(t *testing.T) {
			got := x.match(tt.tenant, tt.typ, nil)
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("match(%q, %q) = %v, want %v", tt.tenant, tt.typ, got, tt.want)
			}
		})
	}
}

// Moving an endpoint to another tenant (or to none) takes it out of the
// old tenant's trie; the last endpoint of a tenant takes its trie along.
func TestIndexTenantChangeAndRemoval(t *testing.T) {
	x := newIndex()
	x.set("crm", "acme", []string{"order.*"})
	x.set("crm", "globex", []string{"order.*"})
	if got := x.match("acme", "order.created", nil); len(got) != 0 {
		t.Fatalf("after moving crm to globex, acme's event matched %v", got)
	}
	if got := x.match("globex", "order.created", nil); !slices.Equal(got, []string{"crm"}) {
		t.Fatalf("globex's event matched %v, want [crm]", got)
	}
	x.set("crm", "", []string{"order.*"})
	if got := x.match("", "order.created", nil); !slices.Equal(got, []string{"crm"}) {
		t.Fatalf("without a tenant crm gets events without one: matched %v", got)
	}
	if _, ok := x.roots["globex"]; ok {
		t.Error("globex's trie is left behind after its last endpoint moved")
	}
	x.remove("crm")
	if got := x.match("acme", "order.created", nil); len(got) != 0 {
		t.Fatalf("after removal matched %v", got)
	}
}

func TestIndexMatch(t *testing.T) {
	x := newIndex()
	x.set("a", "", []string{"order.*"})
	x.set("b", "", []string{"order.created", "lead.>"})
	x.set("c", "", []string{">"})
	x.set("d", "", []string{"*.created"})
	for typ, want := range map[string]string{
		"order.created":    "abcd",
		"order.paid":       "ac",
		"lead.created":     "bcd",
		"lead.x.y":         "bc",
		"lead":             "c",
		"order.created.v2": "c",
	} {
		got := x.match("", typ, nil)
		seen := map[string]bool{}
		for _, id := range got {
			if seen[id] {
				t.Fatalf("%s: %s twice", typ, id)
			}
			seen[id] = true
		}
		if len(got) != len(want) {
			t.Fatalf("%s: got %v, want %s", typ, got, want)
		}
		for _, r := range want {
			if !seen[string(r)] {
				t.Fatalf("%s: got %v, want %s", typ, got, want)
			}
		}
	}
	x.set("b", "", []string{"user.*"})
	x.remove("c")
	if got := x.match("", "lead.x", nil); len(got) != 0 {
		t.Fatalf("after changes lead.x matched %v", got)
	}
}

func BenchmarkIndexMatch100k(b *testing.B) {
	x := newIndex()
	for i := range 100_000 {
		x.set("ep"+itoa(i), "", []string{"tenant" + itoa(i) + ".>"})
	}
	x.set("all-orders", "", []string{"*.order.created"})
	buf := make([]string, 0, 8)
	for b.Loop() {
		buf = x.match("", "tenant4242.order.created", buf[:0])
	}
	if len(buf) != 2 {
		b.Fatalf("matched %v", buf)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

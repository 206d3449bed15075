package dispatch

import (
	"slices"
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

// eventTenant takes a valid Hookjet-Tenant in any case and explains an
// invalid one; an event naming two tenants is invalid.
func TestEventTenant(t *testing.T) {
	for _, tt := range []struct {
		name   string
		h      map[string][]string
		tenant string
		bad    bool
	}{
		{"none", map[string][]string{}, "", false},
		{"valid", map[string][]string{"Hookjet-Tenant": {"acme"}}, "acme", false},
		{"lower-case name", map[string][]string{"hookjet-tenant": {"acme"}}, "acme", false},
		{"upper-case value", map[string][]string{"Hookjet-Tenant": {"Acme"}}, "", true},
		{"empty value", map[string][]string{"Hookjet-Tenant": {""}}, "", true},
		{"wildcard", map[string][]string{"Hookjet-Tenant": {"*"}}, "", true},
		{"two tenants", map[string][]string{"Hookjet-Tenant": {"acme", "globex"}}, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tenant, bad := eventTenant(tt.h)
			if tenant != tt.tenant || (bad != "") != tt.bad {
				t.Errorf("eventTenant(%v) = %q, %q; want %q, bad %v", tt.h, tenant, bad, tt.tenant, tt.bad)
			}
		})
	}
}

package settle

import "testing"

// Tenant takes a valid Hookjet-Tenant in any case and explains an
// invalid one; an event naming two tenants is invalid.
func TestTenantHeader(t *testing.T) {
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
			tenant, bad := Tenant(tt.h)
			if tenant != tt.tenant || (bad != "") != tt.bad {
				t.Errorf("Tenant(%v) = %q, %q; want %q, bad %v", tt.h, tenant, bad, tt.tenant, tt.bad)
			}
		})
	}
}

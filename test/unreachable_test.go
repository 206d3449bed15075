package test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
)

// An endpoint no delivery could ever reach is refused when it is created
// or changed through the admin API (400 naming url and why), instead of
// answering 201 and dead-lettering its first event as rejected (issue 47,
// walkthrough 3). It is the host of the URL that the SSRF guard in force
// for the endpoint refuses: a literal address or localhost; the strict
// guard for an endpoint with a tenant (security.allow_private_networks
// and allow_cidrs do not open it), the operator's for one without. Names
// are left to the dial (DNS may change).
func TestUnreachableEndpointRefusedAtCreateAndUpdate(t *testing.T) {
	type ans struct {
		Error  string `json:"error"`
		Field  string `json:"field"`
		Errors []struct {
			Field string `json:"field"`
		} `json:"errors"`
	}
	refused := func(t *testing.T, h *hookjet, method, path string, body map[string]any, says ...string) {
		t.Helper()
		var out ans
		code := h.api(method, path, consoleToken, body, &out)
		if code != http.StatusBadRequest || out.Field != "url" || len(out.Errors) == 0 || out.Errors[0].Field != "url" {
			t.Errorf("%s %s %v: HTTP %d %+v, want 400 naming url", method, path, body, code, out)
			return
		}
		for _, s := range append(says, "no delivery could ever reach it") {
			if !strings.Contains(out.Error, s) {
				t.Errorf("%s %s %v: error %q does not say %q", method, path, body, out.Error, s)
			}
		}
	}
	created := func(t *testing.T, h *hookjet, body map[string]any) {
		t.Helper()
		body["secrets"] = []string{secretA}
		if code := h.api("POST", "/api/v1/endpoints", consoleToken, body, nil); code != http.StatusCreated {
			t.Errorf("create %v: HTTP %d, want 201", body, code)
		}
	}
	start := func(t *testing.T, edit func(*config.Config)) *hookjet {
		cfg := testConfig(t, t.TempDir(), "portal:\n  allow_private_networks: false\n")
		cfg.Admin.Token = config.NewSecret(consoleToken)
		edit(cfg)
		return startHookjet(t, cfg, cli.Options{})
	}

	t.Run("operators open, tenants strict", func(t *testing.T) {
		h := start(t, func(*config.Config) {}) // security.allow_private_networks: true
		for i, host := range []string{"127.0.0.1:9", "localhost:9", "[::1]:9", "10.0.0.5", "169.254.169.254", "api.localhost"} {
			refused(t, h, "POST", "/api/v1/endpoints", map[string]any{"id": fmt.Sprintf("acme-%d", i), "tenant": "acme", "url": "http://" + host + "/hooks"},
				"portal.allow_private_networks")
		}
		created(t, h, map[string]any{"id": "ops", "url": "http://127.0.0.1:9/hooks"})
		created(t, h, map[string]any{"id": "acme", "tenant": "acme", "url": "https://hooks.example.com/acme"})
		// A name is not judged at create: what it resolves to is, at each dial.
		created(t, h, map[string]any{"id": "acme-name", "tenant": "acme", "url": "http://localhost.example.com/"})
		// Update: giving the loopback operator endpoint a tenant, or the
		// tenant's a loopback URL, is refused, and neither changes.
		refused(t, h, "PATCH", "/api/v1/endpoints/ops", map[string]any{"tenant": "acme"}, "127.0.0.1 is a loopback address")
		refused(t, h, "PATCH", "/api/v1/endpoints/acme", map[string]any{"url": "http://127.0.0.1:9/"}, "loopback")
		var ops, acme struct{ URL, Tenant string }
		h.api("GET", "/api/v1/endpoints/ops", consoleToken, nil, &ops)
		h.api("GET", "/api/v1/endpoints/acme", consoleToken, nil, &acme)
		if ops.Tenant != "" || acme.URL != "https://hooks.example.com/acme" {
			t.Errorf("a refused update changed the endpoints: ops %+v, acme %+v", ops, acme)
		}
	})

	t.Run("operators strict but a CIDR", func(t *testing.T) {
		h := start(t, func(c *config.Config) {
			c.Security.AllowPrivateNetworks = false
			c.Security.AllowCIDRs = []string{"10.0.0.0/8"}
		})
		refused(t, h, "POST", "/api/v1/endpoints", map[string]any{"id": "ops-lo", "url": "http://127.0.0.1:9/"}, "security.allow_private_networks")
		refused(t, h, "POST", "/api/v1/endpoints", map[string]any{"id": "ops-local", "url": "http://localhost:9/"}, "localhost is 127.0.0.1")
		created(t, h, map[string]any{"id": "ops-10", "url": "http://10.1.2.3/"})
		// allow_cidrs opens the operator's endpoints, never a tenant's.
		refused(t, h, "POST", "/api/v1/endpoints", map[string]any{"id": "acme-10", "tenant": "acme", "url": "http://10.1.2.3/"}, "private")
	})

	t.Run("tenants opened", func(t *testing.T) {
		h := start(t, func(c *config.Config) { c.Portal.AllowPrivateNetworks = true })
		created(t, h, map[string]any{"id": "acme-lo", "tenant": "acme", "url": "http://127.0.0.1:9/"})
		// Unspecified and multicast addresses are never opened.
		refused(t, h, "POST", "/api/v1/endpoints", map[string]any{"id": "acme-zero", "tenant": "acme", "url": "http://0.0.0.0:9/"}, "unspecified")
	})
}

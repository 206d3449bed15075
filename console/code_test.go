package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// A portal session sets its endpoint's filter; it sets the transform only
// with portal.allow_transforms.
func TestPortalSetsFilterNotTransformByDefault(t *testing.T) {
	for _, allow := range []bool{false, true} {
		var mu sync.Mutex
		var patches []map[string]any
		mux := http.NewServeMux()
		mux.Handle("GET /api/v1/endpoints/crm", answer(`{"id":"crm","url":"https://crm.example.com/h","tenant":"acme","filter":"type == \"a\"","breaker":{"state":"closed"}}`))
		mux.Handle("GET /api/v1/endpoints/crm/attempts", answer(`{"attempts":[],"next":""}`))
		mux.Handle("GET /api/v1/dlq", answer(`{"entries":[]}`))
		mux.HandleFunc("PATCH /api/v1/endpoints/crm", func(w http.ResponseWriter, r *http.Request) {
			var m map[string]any
			_ = json.NewDecoder(r.Body).Decode(&m)
			mu.Lock()
			patches = append(patches, m)
			mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"id":"crm"}`)
		})
		c, err := New(Options{API: mux, Token: "admintoken", SecretKey: []byte("0123456789abcdef0123456789abcdef"), AllowTransforms: allow})
		if err != nil {
			t.Fatal(err)
		}
		h := c.AdminHandler()
		u := portalLink(t, h, `{"tenant":"acme"}`)
		pw := serve(h, u.Path+"endpoints/crm", nil)
		page := pw.Body.String()
		if pw.Code != http.StatusOK || !strings.Contains(page, `name="filter"`) {
			t.Fatalf("endpoint page: HTTP %d without a filter field", pw.Code)
		}
		if got := strings.Contains(page, `name="transform"`); got != allow {
			t.Errorf("allow_transforms %v: transform field shown %v", allow, got)
		}
		csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
		if csrf == nil {
			t.Fatal("no CSRF token")
		}
		post := func(form url.Values) int {
			form.Set("csrf", csrf[1])
			return serve(h, u.Path+"endpoints/crm/edit", form).Code
		}
		// With a transform: saved when allowed, refused (403, nothing
		// saved) by default.
		want := http.StatusForbidden
		if allow {
			want = http.StatusSeeOther
		}
		if code := post(url.Values{"filter": {"data.amount > 1"}, "transform": {"function handler(w) { return w }"}}); code != want {
			t.Fatalf("allow_transforms %v: save with a transform: HTTP %d, want %d", allow, code, want)
		}
		if !allow {
			if code := post(url.Values{"filter": {"data.amount > 1"}}); code != http.StatusSeeOther {
				t.Fatalf("save a filter: HTTP %d, want 303", code)
			}
		}
		c.Close()
		mu.Lock()
		if len(patches) != 1 || patches[0]["filter"] != "data.amount > 1" {
			t.Fatalf("patches %v", patches)
		}
		if _, has := patches[0]["transform"]; has != allow {
			t.Errorf("allow_transforms %v: the patch carries a transform: %v", allow, has)
		}
		mu.Unlock()
	}
}

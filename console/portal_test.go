package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/config"
)

// POST /api/v1/portal/sessions takes only a tenant that endpoints and
// events can carry (config.CheckTenant): anything else is a 400 naming the
// field tenant, and no link is issued.
func TestPortalSessionRefusesWhatIsNotATenant(t *testing.T) {
	c, err := New(Options{API: http.NotFoundHandler(), Token: "admintoken", SecretKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.AdminHandler()
	post := func(body string) (int, map[string]any) {
		req := httptest.NewRequest("POST", "/api/v1/portal/sessions", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer admintoken")
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var out map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: answer is not JSON: %q", body, w.Body.String())
		}
		return w.Code, out
	}
	for _, tenant := range []string{"", "Acme", "acme corp", "acme.eu", "acme/../globex", "ac\u00e9me", strings.Repeat("a", 1025)} {
		body, _ := json.Marshal(map[string]string{"tenant": tenant})
		code, out := post(string(body))
		if code != http.StatusBadRequest || out["field"] != "tenant" || out["url"] != nil {
			t.Errorf("tenant %.40q: %d %v, want 400 naming the field tenant", tenant, code, out)
		}
		if msg, _ := out["error"].(string); !strings.HasPrefix(msg, "tenant: ") {
			t.Errorf("tenant %.40q: error %q does not name the field", tenant, msg)
		}
	}
	for _, tenant := range []string{"acme", "acme-eu_2", strings.Repeat("a", 1024)} {
		code, out := post(`{"tenant":"` + tenant + `"}`)
		if code != http.StatusCreated || out["tenant"] != tenant || out["url"] == nil {
			t.Errorf("tenant %.40q: %d %v, want 201 with a link", tenant, code, out)
		}
	}
}

// Every 400 of POST /api/v1/portal/sessions has the admin API's one error
// shape (error, field, errors: [{field, error}]) and never a Go type name
// (issue 47, walkthrough 5: it lacked errors).
func TestPortalSessionErrorsHaveOneShape(t *testing.T) {
	c, err := New(Options{API: http.NotFoundHandler(), Token: "admintoken", SecretKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.AdminHandler()
	for _, tt := range []struct{ body, field string }{
		{`{"tenant":"Acme"}`, "tenant"},
		{`{}`, "tenant"},
		{`{"tenant":"acme","ttl":"forever"}`, "ttl"},
		{`{"tenant":"acme","ttl":60}`, "ttl"},
		{`{"tenant":"acme","colour":"red"}`, "colour"},
		{`["acme"]`, "body"},
		{``, "body"},
		{`{"tenant":"acme"} {}`, "body"},
	} {
		req := httptest.NewRequest("POST", "/api/v1/portal/sessions", strings.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer admintoken")
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var out struct {
			Error  string `json:"error"`
			Field  string `json:"field"`
			Errors []struct {
				Field string `json:"field"`
				Error string `json:"error"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: answer is not JSON: %q", tt.body, w.Body.String())
		}
		if w.Code != http.StatusBadRequest || out.Field != tt.field || len(out.Errors) != 1 ||
			out.Errors[0].Field != tt.field || out.Errors[0].Error != out.Error || !strings.HasPrefix(out.Error, tt.field+": ") {
			t.Errorf("%s: HTTP %d %s, want 400 naming %s in error, field and errors", tt.body, w.Code, w.Body.String(), tt.field)
		}
		if strings.Contains(out.Error, "Go value") || strings.Contains(out.Error, "Go struct") || strings.Contains(out.Error, "json:") {
			t.Errorf("%s: the error speaks Go: %s", tt.body, out.Error)
		}
	}
}

// portalAPI is an admin API with one endpoint of tenant acme whose
// delivery the strict SSRF guard refused, in the operator's words.
func portalAPI() http.Handler {
	const refused = "refused: 127.0.0.1 is a loopback address (" + config.TenantGuardReason + ")"
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/endpoints", answer(`{"endpoints":[{"id":"crm","url":"http://127.0.0.1:9/h","tenant":"acme","breaker":{"state":"closed"}}],"next":""}`))
	mux.Handle("GET /api/v1/endpoints/crm", answer(`{"id":"crm","url":"http://127.0.0.1:9/h","tenant":"acme","breaker":{"state":"closed"}}`))
	mux.Handle("GET /api/v1/endpoints/crm/attempts", answer(`{"attempts":[{"event_id":"evt_1","endpoint":"crm","attempt":1,"trigger":"delivery","started_at":"2026-01-02T03:04:05Z","class":"rejected","error":"`+refused+`"},
		{"event_id":"evt_1","endpoint":"crm","attempt":1,"trigger":"delivery","started_at":"2026-01-02T03:04:05Z","class":"dead_letter","reason":"rejected","error":"`+refused+`"}],"next":""}`))
	mux.Handle("GET /api/v1/dlq", answer(`{"entries":[{"seq":1,"event_id":"evt_1","event_type":"order.created","endpoint":"crm","reason":"rejected","attempts":1,"last_error":"`+refused+`"}]}`))
	mux.Handle("POST /api/v1/endpoints", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg := "url: no delivery could ever reach it: " + refused
		_, _ = io.WriteString(w, `{"error":"`+msg+`","field":"url","errors":[{"field":"url","error":"`+msg+`"}]}`)
	}))
	return mux
}

// The portal speaks the customer's words: a 2 h link says it expires in
// 2h (not "1h from now", the hours of 1h59m59s), and the refusals of the
// SSRF guard, at create and on an endpoint's attempts and failed
// deliveries, never name portal.allow_private_networks (issue 47,
// walkthrough 4).
func TestPortalSpeaksTheCustomersWords(t *testing.T) {
	c, err := New(Options{API: portalAPI(), Token: "admintoken", SecretKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.AdminHandler()
	u := portalLink(t, h, `{"tenant":"acme","ttl":"2h"}`)
	get := func(path string) (int, string) {
		w := serve(h, path, nil)
		return w.Code, w.Body.String()
	}
	code, home := get(u.Path)
	if code != http.StatusOK {
		t.Fatalf("portal home: HTTP %d", code)
	}
	if m := regexp.MustCompile(`link expires[^<]*<time[^>]*>([^<]*)</time>`).FindStringSubmatch(home); m == nil || m[1] != "2h" {
		t.Errorf("a 2h link's expiry reads %q, want 2h", m)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(home)
	if csrf == nil {
		t.Fatal("no CSRF token on the portal's home")
	}
	code, page := get(u.Path + "endpoints/crm")
	if code != http.StatusOK {
		t.Fatalf("portal endpoint page: HTTP %d", code)
	}
	form := url.Values{"csrf": {csrf[1]}, "url": {"http://127.0.0.1:9/h"}, "events": {"order.*"}}
	pw := serve(h, u.Path+"endpoints", form)
	if pw.Code != http.StatusBadRequest || !strings.Contains(pw.Body.String(), "loopback") {
		t.Errorf("portal create of a loopback URL: HTTP %d, want 400 saying why", pw.Code)
	}
	for name, body := range map[string]string{"endpoint page": page, "create answer": pw.Body.String()} {
		for _, operator := range []string{"portal.allow_private_networks", "security.", "belongs to a tenant"} {
			if strings.Contains(body, operator) {
				t.Errorf("the portal's %s shows the operator's words %q", name, operator)
			}
		}
		if !strings.Contains(body, "public internet addresses") {
			t.Errorf("the portal's %s does not say where deliveries may go", name)
		}
	}
}

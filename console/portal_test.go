package console

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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

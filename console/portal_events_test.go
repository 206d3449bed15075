package console

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// eventsAPI answers the admin API's event view and endpoints as DESIGN
// documents them: acme's event evt_a was delivered to acme's crm and to
// the operator's audit (no tenant); globex's evt_g to globex's own.
func eventsAPI() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /api/v1/events/evt_a", answer(`{"id":"evt_a","type":"order.created","tenant":"acme","data":{"amount":1200,"note":"<b>x</b>"},
		"deliveries":[{"endpoint":"crm","number":1,"trigger":"delivery","state":"delivered","attempts":[{"event_id":"evt_a","endpoint":"crm","attempt":1,"class":"success","status":200}]},
		{"endpoint":"audit","number":1,"trigger":"delivery","state":"delivered","attempts":[{"event_id":"evt_a","endpoint":"audit","attempt":1,"class":"success","status":200,"response":"audit-internal"}]}]}`))
	mux.Handle("GET /api/v1/events/evt_g", answer(`{"id":"evt_g","type":"order.created","tenant":"globex","data":{"card":"4242"},"deliveries":[]}`))
	mux.Handle("GET /api/v1/endpoints/crm", answer(`{"id":"crm","url":"https://crm.example.com/h","tenant":"acme","breaker":{"state":"closed"}}`))
	mux.Handle("GET /api/v1/endpoints/audit", answer(`{"id":"audit","url":"https://audit.internal/h","tenant":"","breaker":{"state":"closed"}}`))
	mux.Handle("GET /api/v1/events", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("tenant") != "acme" {
			_, _ = io.WriteString(w, `{"events":[{"id":"evt_g","type":"order.created","tenant":"globex"}],"next":""}`)
			return
		}
		_, _ = io.WriteString(w, `{"events":[{"id":"evt_a","type":"order.created","tenant":"acme"}],"next":""}`)
	}))
	return mux
}

// The portal's event page shows the tenant's own event with its payload
// and its deliveries to the tenant's endpoints only (not the operator's
// audit endpoint); another tenant's event is 404 and its list asks the
// API for the session's tenant alone.
func TestPortalEventIsTheTenantsOnly(t *testing.T) {
	c, err := New(Options{API: eventsAPI(), Token: "admintoken", SecretKey: []byte("0123456789abcdef0123456789abcdef")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.AdminHandler()
	u := portalLink(t, h, `{"tenant":"acme"}`)
	get := func(path string) (int, string) {
		w := serve(h, u.Path+path, nil)
		return w.Code, w.Body.String()
	}
	code, page := get("events/evt_a")
	if code != http.StatusOK || !strings.Contains(page, `&#34;amount&#34;: 1200`) || !strings.Contains(page, "&lt;b&gt;x&lt;/b&gt;") || !strings.Contains(page, `href="`+u.Path+`endpoints/crm"`) {
		t.Fatalf("acme's event: HTTP %d\n%s", code, page)
	}
	if strings.Contains(page, "audit") {
		t.Error("acme's event page shows the operator's audit endpoint")
	}
	if code, page := get("events/evt_g"); code != http.StatusNotFound || strings.Contains(page, "4242") {
		t.Errorf("globex's event in acme's portal: HTTP %d", code)
	}
	if code, page := get("events"); code != http.StatusOK || !strings.Contains(page, "evt_a") || strings.Contains(page, "evt_g") {
		t.Errorf("acme's events: HTTP %d\n%s", code, page)
	}
}

package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// TestEventsListSendsEachFilterAndPrintsATable: every flag of events list
// becomes its query parameter, and the page prints as a table with the
// next page's --cursor.
func TestEventsListSendsEachFilterAndPrintsATable(t *testing.T) {
	var mu sync.Mutex
	var query string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		query = r.URL.Query().Encode()
		mu.Unlock()
		if r.URL.Path != "/api/v1/events" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"events":[{"id":"evt_9","type":"order.paid","tenant":"acme","key":"","published_at":"2026-12-07T10:00:01.5Z","size":42,"seq":1187}],"next":"1187"}`)
	}))
	defer srv.Close()
	code, out, errOut := runAgainst(t, srv, "events", "list", "--type", "order.paid", "--tenant", "acme", "--prefix", "evt_", "--since", "2h", "--until", "2026-12-07T11:00:00Z", "--limit", "1", "--cursor", "2000")
	if code != 0 {
		t.Fatalf("events list: exit %d %q", code, errOut)
	}
	mu.Lock()
	got := query
	mu.Unlock()
	if want := "cursor=2000&limit=1&prefix=evt_&since=2h&tenant=acme&type=order.paid&until=2026-12-07T11%3A00%3A00Z"; got != want {
		t.Errorf("query %q, want %q", got, want)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "PUBLISHED") || strings.Join(strings.Fields(lines[1]), " ") != "2026-12-07T10:00:01.500Z evt_9 order.paid acme - 42 1187" || lines[2] != "(more: --cursor 1187)" {
		t.Fatalf("events list printed:\n%s", out)
	}
}

// TestEventsShowPrintsThePayloadAndWhyNot: events show prints the payload
// indented (or a text payload as it is) and each endpoint's state with
// its reason.
func TestEventsShowPrintsThePayloadAndWhyNot(t *testing.T) {
	api := &answers{by: map[string][2]string{
		"GET /api/v1/events/evt_1": {"200", `{"id":"evt_1","type":"order.created","tenant":"acme","key":"k1","seq":5,"data":{"amount":10},
			"deliveries":[{"endpoint":"big","number":0,"trigger":"","state":"filtered_out","reason":"filtered out: its filter is false for this event","attempts":[]},
			{"endpoint":"dis","number":0,"trigger":"","state":"pending","held":"disabled","reason":"held: the endpoint is disabled","attempts":[],
			 "request":{"destination":"webhook","method":"POST","url":"https://dis.example.com/","headers":{"X-Api-Key":"[redacted]","webhook-id":"evt_1"}}}]}`},
		"GET /api/v1/events/evt_2": {"200", `{"id":"evt_2","type":"note","tenant":"","key":"","data_base64":"aGVsbG8=","deliveries":[]}`},
		"GET /api/v1/events/evt_3": {"200", `{"id":"evt_3","type":"note","tenant":"","key":"","data_hidden":true,"deliveries":[]}`},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	for id, wants := range map[string][]string{
		"evt_1": {"tenant     acme", "key        k1", "seq        5", "payload:\n{\n  \"amount\": 10\n}", "big: filtered_out — filtered out: its filter is false", "dis: pending — held: the endpoint is disabled", "request: POST https://dis.example.com/ (headers: X-Api-Key, webhook-id)"},
		"evt_2": {"payload:\nhello\n"},
		"evt_3": {"payload: hidden (console.show_payloads is false)"},
	} {
		code, out, errOut := runAgainst(t, srv, "events", "show", id)
		if code != 0 {
			t.Fatalf("events show %s: exit %d %q", id, code, errOut)
		}
		for _, w := range wants {
			if !strings.Contains(out, w) {
				t.Errorf("events show %s: no %q in\n%s", id, w, out)
			}
		}
	}
}

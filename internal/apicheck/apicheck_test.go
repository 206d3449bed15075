package apicheck

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// summary is a /api/v1/summary answer as the document describes it.
const summary = `{"pending": 0, "awaiting_retry": 0, "in_flight": 0, "dead_letter": 0, "delivered_last_hour": 2,
 "failed_last_hour": 0, "oldest_pending_age_seconds": 0, "endpoints": 1, "disabled_endpoints": 0,
 "open_breakers": 0, "events_stored": 2, "events_bytes": 24, "waiting_endpoints": 0}`

// scripted answers each request with the status and body of its path.
func scripted(t *testing.T, answers map[string]struct {
	status int
	body   string
}) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := answers[r.Method+" "+r.URL.Path]
		if !ok {
			a.status, a.body = http.StatusNotFound, `{"error": "no route"}`
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = io.WriteString(w, a.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTransportCatchesDrift shows that the wrapper the end-to-end tests run
// under fails a call whose request or answer drifts from the document, and
// passes those that match it (and bad requests that are refused).
func TestTransportCatchesDrift(t *testing.T) {
	srv := scripted(t, map[string]struct {
		status int
		body   string
	}{
		"GET /api/v1/summary":                  {200, summary},
		"GET /api/v1/dlq/stats":                {200, `{"endpoints": [], "surprise": 1}`},
		"GET /api/v1/endpoints":                {200, `{"endpoints": [], "next": 7}`},
		"POST /api/v1/portal/sessions":         {201, `{"url": "http://x/portal/s/t/", "expires_at": "2026-12-01T08:00:00Z", "tenant": "", "read_only": false}`},
		"POST /api/v1/dlq/replay":              {400, `{"error": "ids: want []string", "field": "ids"}`},
		"POST /api/v1/endpoints/crm/redeliver": {200, `{"matched": 1, "queued": 1}`},
		"GET /api/v1/attempts":                 {418, `{"error": "teapot"}`},
	})
	tr, err := New(http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: tr}
	tests := []struct {
		name, method, path, body string
		wantErr                  string // "" for a call the document accepts
	}{
		{"answer as documented", "GET", "/api/v1/summary", "", ""},
		{"extra field in an answer", "GET", "/api/v1/dlq/stats", "", "surprise"},
		{"mistyped field in an answer", "GET", "/api/v1/endpoints", "", "answer"},
		{"request missing a required field, accepted", "POST", "/api/v1/portal/sessions", `{"ttl": "1h"}`, "did not answer 4xx"},
		{"bad request refused with the error object", "POST", "/api/v1/dlq/replay", `{"ids": 5}`, ""},
		{"required request field missing, accepted", "POST", "/api/v1/endpoints/crm/redeliver", `{"dry_run": true}`, "did not answer 4xx"},
		{"undocumented status", "GET", "/api/v1/attempts", "", "418"},
		{"undocumented query parameter type", "GET", "/api/v1/endpoints?limit=many", "", "did not answer 4xx"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader
			if tt.body != "" {
				body = strings.NewReader(tt.body)
			}
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if body != nil {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := hc.Do(req)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("want the call to pass, got %v", err)
				}
				_ = resp.Body.Close()
				return
			}
			if err == nil {
				_ = resp.Body.Close()
				t.Fatalf("want the wrapper to fail the call (%s), it passed", tt.wantErr)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %q does not mention %q", err, tt.wantErr)
			}
		})
	}
	if got := len(tr.Failures()); got != 6 {
		t.Errorf("Failures() holds %d mismatches, want 6: %q", got, tr.Failures())
	}
}

// TestOtherPathsPassThrough: only /api/v1/ is validated (receivers, the
// inbound gateway and the console are not the API).
func TestOtherPathsPassThrough(t *testing.T) {
	srv := scripted(t, nil)
	tr, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: tr}).Get(srv.URL + "/webhooks")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want the server's 404", resp.StatusCode)
	}
}

package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// answers is an admin API answering each "METHOD path" with a status and
// a body, recording the requests.
type answers struct {
	mu   sync.Mutex
	reqs []string
	by   map[string][2]string // "METHOD path" -> {status, body}
}

func (a *answers) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	a.reqs = append(a.reqs, r.Method+" "+r.URL.Path)
	a.mu.Unlock()
	ans, ok := a.by[r.Method+" "+r.URL.Path]
	if !ok {
		ans = [2]string{"404", `{"error":"no route"}`}
	}
	w.Header().Set("Content-Type", "application/json")
	code := map[string]int{"200": 200, "401": 401, "404": 404, "409": 409, "503": 503}[ans[0]]
	w.WriteHeader(code)
	_, _ = io.WriteString(w, ans[1])
}

func TestEndpointsEnableDisableAndSuggestions(t *testing.T) {
	api := &answers{by: map[string][2]string{
		"POST /api/v1/endpoints/crm/enable":  {"200", `{"id":"crm"}`},
		"POST /api/v1/endpoints/crm/disable": {"200", `{"id":"crm","disabled":true}`},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	if code, out, errOut := runAgainst(t, srv, "endpoints", "disable", "crm"); code != 0 || !strings.Contains(out, "disabled crm") {
		t.Errorf("endpoints disable crm: exit %d %q %q", code, out, errOut)
	}
	if code, out, errOut := runAgainst(t, srv, "endpoints", "enable", "crm"); code != 0 || !strings.Contains(out, "enabled crm") {
		t.Errorf("endpoints enable crm: exit %d %q %q", code, out, errOut)
	}
	if got := strings.Join(api.reqs, ","); got != "POST /api/v1/endpoints/crm/disable,POST /api/v1/endpoints/crm/enable" {
		t.Errorf("requests %s", got)
	}
	if code, _, errOut := runAgainst(t, srv, "endpoints", "disbale", "crm"); code != 2 || !strings.Contains(errOut, `did you mean "disable"`) {
		t.Errorf("endpoints disbale crm: exit %d %q, want 2 suggesting disable", code, errOut)
	}
}

// An API answer that is the user's bad input (a conflict) exits 2 as
// README says; a 401 says how to pass the token; a 503 stays a
// runtime error (exit 1).
func TestAPIAnswerExitCodesAndTokenHint(t *testing.T) {
	api := &answers{by: map[string][2]string{
		"DELETE /api/v1/endpoints/file": {"409", `{"error":"endpoint file comes from the config file"}`},
		"GET /api/v1/summary":           {"401", `{"error":"missing or wrong bearer token"}`},
		"GET /api/v1/dlq/stats":         {"503", `{"error":"nats unavailable"}`},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	if code, _, errOut := runAgainst(t, srv, "endpoints", "rm", "file"); code != 2 || !strings.Contains(errOut, "config file") {
		t.Errorf("rm of a config endpoint (409): exit %d %q, want 2", code, errOut)
	}
	code, _, errOut := runAgainst(t, srv, "status")
	if code != 2 || !strings.Contains(errOut, "--token") || !strings.Contains(errOut, "HOOKJET_ADMIN_TOKEN") {
		t.Errorf("status without the token (401): exit %d %q, want 2 naming --token and HOOKJET_ADMIN_TOKEN", code, errOut)
	}
	if code, _, errOut := runAgainst(t, srv, "dlq", "stats"); code != 1 {
		t.Errorf("dlq stats on a 503: exit %d %q, want 1", code, errOut)
	}
}

// endpoints show prints what the API has: owner, tenant, last test,
// settings and when a rotated-out secret stops signing.
func TestEndpointsShowPrintsOwnerLastTestSettings(t *testing.T) {
	api := &answers{by: map[string][2]string{
		"GET /api/v1/endpoints/crm": {"200", `{"id":"crm","url":"https://crm.example.com/h","events":["order.*"],"source":"api",
			"tenant":"acme","owner":"payments-team","breaker":{"state":"closed"},
			"last_test":{"event_id":"evt_t1","at":"2026-01-02T03:04:05Z","class":"success","status":204,"duration_ms":12.5},
			"settings":{"timeout":"15s","max_in_flight":16,"rate_limit":{"rps":5,"burst":5},
				"retry":{"base":"5s","cap":"1h0m0s","max_attempts":20,"max_age":"24h0m0s"},
				"breaker":{"failure_threshold":10,"cooldown":"5m0s","max_cooldown":"1h0m0s","slow_p95":"5s"},
				"max_backlog":100000,"secrets_expire":["2026-01-03T00:00:00Z"]}}`},
	}}
	srv := httptest.NewServer(api)
	defer srv.Close()
	code, out, errOut := runAgainst(t, srv, "endpoints", "show", "crm")
	if code != 0 {
		t.Fatalf("show: exit %d %q", code, errOut)
	}
	for _, want := range []string{"owner         payments-team", "tenant        acme", "evt_t1: success, HTTP 204",
		"old secret stops signing at 2026-01-03T00:00:00Z", "timeout       15s", "5/s, burst 5", "max 20 attempts", "max backlog   100000"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q:\n%s", want, out)
		}
	}
}

package test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/server"
)

func TestAdminAPIAuthShapesAndSecrets(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		if string(d.Body) == `{"fail":true}` {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	const token = "admintoken-0123456789"
	const headerValue = "header-value-never-shown"
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "api", URL: r.URL, Extra: "    headers: {X-Secret-Header: " + headerValue + "}\n"})
	cfg.Admin.Token = config.NewSecret(token)
	reg := prometheus.NewRegistry()
	logs := &lockedWriter{w: &strings.Builder{}}
	h := startHookjet(t, cfg, cli.Options{Registry: reg, Log: server.NewLogger(config.Log{Format: "json", Level: "debug"}, logs)})

	h.publish("order.created", "evt_ok", []byte(`{"ok":true}`))
	h.publish("order.created", "evt_bad", []byte(`{"fail":true}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if r.count() != 2 || len(h.dlq("")) != 1 {
			return fmt.Errorf("requests=%d", r.count())
		}
		return nil
	})

	// Open routes and protected routes.
	for _, path := range []string{"/healthz", "/readyz"} {
		if code := h.api("GET", path, "", nil, nil); code != 200 {
			t.Errorf("%s without token: HTTP %d", path, code)
		}
	}
	routes := []struct{ method, path string }{
		{"GET", "/metrics"}, {"GET", "/api/v1/summary"}, {"GET", "/api/v1/endpoints"},
		{"GET", "/api/v1/endpoints/api"}, {"GET", "/api/v1/dlq"}, {"GET", "/api/v1/dlq/stats"},
		{"POST", "/api/v1/dlq/replay"}, {"POST", "/api/v1/endpoints/api/disable"},
	}
	for _, rt := range routes {
		for _, tok := range []string{"", "wrong"} {
			var e struct {
				Error string `json:"error"`
			}
			if code := h.api(rt.method, rt.path, tok, nil, &e); code != http.StatusUnauthorized || e.Error == "" {
				t.Errorf("%s %s with token %q: HTTP %d %+v", rt.method, rt.path, tok, code, e)
			}
		}
	}

	var sum map[string]any
	if code := h.api("GET", "/api/v1/summary", token, nil, &sum); code != 200 {
		t.Fatalf("summary: HTTP %d", code)
	}
	for _, k := range []string{"pending", "awaiting_retry", "in_flight", "dead_letter", "delivered_last_hour", "failed_last_hour", "oldest_pending_age_seconds"} {
		if _, ok := sum[k]; !ok {
			t.Errorf("summary lacks %q: %v", k, sum)
		}
	}
	if sum["dead_letter"].(float64) != 1 || sum["delivered_last_hour"].(float64) != 1 || sum["failed_last_hour"].(float64) != 1 {
		t.Errorf("summary counts: %v", sum)
	}

	var list struct {
		Endpoints []map[string]any `json:"endpoints"`
	}
	if code := h.api("GET", "/api/v1/endpoints", token, nil, &list); code != 200 || len(list.Endpoints) != 1 {
		t.Fatalf("endpoints: HTTP %d %v", code, list)
	}
	ep := list.Endpoints[0]
	for _, k := range []string{"id", "url", "events", "disabled", "breaker", "latency_ms", "first_attempt_success_rate", "pending", "dead_letters"} {
		if _, ok := ep[k]; !ok {
			t.Errorf("endpoint lacks %q", k)
		}
	}
	br := ep["breaker"].(map[string]any)
	for _, k := range []string{"state", "consecutive_failures", "cooldown_seconds", "opened_at"} {
		if _, ok := br[k]; !ok {
			t.Errorf("breaker lacks %q", k)
		}
	}
	lat := ep["latency_ms"].(map[string]any)
	for _, k := range []string{"p50", "p95", "p99", "samples"} {
		if _, ok := lat[k]; !ok {
			t.Errorf("latency_ms lacks %q", k)
		}
	}
	if ep["dead_letters"].(float64) != 1 {
		t.Errorf("dead_letters = %v", ep["dead_letters"])
	}

	var e struct {
		Error string `json:"error"`
	}
	if code := h.api("GET", "/api/v1/endpoints/nope", token, nil, &e); code != 404 || e.Error == "" {
		t.Errorf("unknown endpoint: HTTP %d %+v", code, e)
	}
	if code := h.api("GET", "/api/v1/dlq?limit=0", token, nil, &e); code != 400 || !strings.Contains(e.Error, "limit") {
		t.Errorf("bad limit: HTTP %d %+v", code, e)
	}
	if code := h.api("GET", "/api/v1/dlq?since=yesterday", token, nil, &e); code != 400 || !strings.Contains(e.Error, "since") {
		t.Errorf("bad since: HTTP %d %+v", code, e)
	}
	if code := h.api("POST", "/api/v1/dlq/replay", token, map[string]any{"endpoint": "nope"}, &e); code != 404 {
		t.Errorf("replay unknown endpoint: HTTP %d %+v", code, e)
	}
	if code := h.api("POST", "/api/v1/dlq/replay", token, map[string]any{"bogus": 1}, &e); code != 400 {
		t.Errorf("replay unknown field: HTTP %d %+v", code, e)
	}
	var stats struct {
		Endpoints []struct {
			Endpoint         string `json:"endpoint"`
			Count            int    `json:"count"`
			MostCommonStatus int    `json:"most_common_status"`
		} `json:"endpoints"`
	}
	if code := h.api("GET", "/api/v1/dlq/stats", token, nil, &stats); code != 200 || len(stats.Endpoints) != 1 || stats.Endpoints[0].Count != 1 || stats.Endpoints[0].MostCommonStatus != 400 {
		t.Errorf("dlq stats: HTTP %d %+v", code, stats)
	}

	// Metrics moved by the attempts and the dead letter; the endpoint's
	// other classes and reasons exist at 0 from the start.
	want := `
# HELP hookjet_attempts_total Delivery attempts by endpoint and outcome class.
# TYPE hookjet_attempts_total counter
hookjet_attempts_total{class="gone",endpoint="api"} 0
hookjet_attempts_total{class="permanent",endpoint="api"} 1
hookjet_attempts_total{class="rate_limited",endpoint="api"} 0
hookjet_attempts_total{class="success",endpoint="api"} 1
hookjet_attempts_total{class="transient",endpoint="api"} 0
# HELP hookjet_dead_letters_total Messages moved to HOOKJET_DLQ by endpoint and reason.
# TYPE hookjet_dead_letters_total counter
hookjet_dead_letters_total{endpoint="api",reason="auth"} 0
hookjet_dead_letters_total{endpoint="api",reason="exhausted"} 0
hookjet_dead_letters_total{endpoint="api",reason="expired"} 0
hookjet_dead_letters_total{endpoint="api",reason="gone"} 0
hookjet_dead_letters_total{endpoint="api",reason="invalid"} 0
hookjet_dead_letters_total{endpoint="api",reason="overflow"} 0
hookjet_dead_letters_total{endpoint="api",reason="permanent"} 1
hookjet_dead_letters_total{endpoint="api",reason="rejected"} 0
hookjet_dead_letters_total{endpoint="api",reason="transform"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "hookjet_attempts_total", "hookjet_dead_letters_total"); err != nil {
		t.Error(err)
	}

	// No secret or configured header value anywhere an operator looks.
	req, _ := http.NewRequest("GET", "http://"+h.srv.AdminAddr()+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var raw strings.Builder
	for _, p := range []string{"/api/v1/endpoints", "/api/v1/endpoints/api", "/api/v1/dlq", "/api/v1/summary"} {
		var v any
		h.api("GET", p, token, nil, &v)
		fmt.Fprintf(&raw, "%v\n", v)
	}
	h.stop()
	for what, text := range map[string]string{"metrics": string(metrics), "api": raw.String(), "logs": logs.String()} {
		for _, s := range []string{secretA[6:], secretB[6:], headerValue, token, `{"ok":true}`} {
			if strings.Contains(text, s) {
				t.Errorf("%s contain %q", what, s)
			}
		}
	}
}

type lockedWriter struct {
	mu sync.Mutex
	w  *strings.Builder
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

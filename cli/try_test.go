package cli

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestEndpointsTry(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.URL.Path+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/endpoints/shop/filter/test":
			if strings.Contains(string(b), `"filter":"data.amount \u003e"`) {
				w.WriteHeader(http.StatusBadRequest)
				_, _ = io.WriteString(w, `{"error":"filter: 1:14: Syntax error: mismatched input","field":"filter"}`)
				return
			}
			_, _ = io.WriteString(w, `{"match":true}`)
		case "/api/v1/endpoints/shop/transform/test":
			_, _ = io.WriteString(w, `{"request":{"url":"https://shop.example.com/in","headers":{"X-Api-Key":"[redacted]","Content-Type":"application/json"},"body":"{\"text\":\"order o7\"}"},"cancel":false}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	script := filepath.Join(t.TempDir(), "t.js")
	if err := os.WriteFile(script, []byte("function handler(w) { return w }"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runAgainst(t, srv, "endpoints", "try", "shop", "--type", "order.created", "--data", `{"amount":1500}`,
		"--header", "X-Region=eu", "--filter", "data.amount > 1000", "--transform", "@"+script)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"filter     match", "url        https://shop.example.com/in", "header     X-Api-Key: [redacted]", `body       {"text":"order o7"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	mu.Lock()
	got := strings.Join(bodies, "\n")
	mu.Unlock()
	for _, want := range []string{
		`/api/v1/endpoints/shop/filter/test {"event":{"type":"order.created","data":{"amount":1500},"headers":{"X-Region":"eu"}},"filter":"data.amount \u003e 1000"}`,
		`/api/v1/endpoints/shop/transform/test {"event":{"type":"order.created","data":{"amount":1500},"headers":{"X-Region":"eu"}},"transform":"function handler(w) { return w }"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("requests lack %s:\n%s", want, got)
		}
	}

	code, _, errOut = runAgainst(t, srv, "endpoints", "try", "shop", "--event-id", "evt_1", "--filter", "data.amount >")
	if code != 2 || !strings.Contains(errOut, "filter: 1:14: Syntax error") {
		t.Fatalf("a bad candidate: exit %d: %s", code, errOut)
	}
	code, _, errOut = runAgainst(t, srv, "endpoints", "try", "shop")
	if code != 2 || !strings.Contains(errOut, "give --event-id or --type") {
		t.Fatalf("no event: exit %d: %s", code, errOut)
	}
}

func TestEndpointsAddSendsFilterAndTransform(t *testing.T) {
	stub := &apiStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	code, _, errOut := runAgainst(t, srv, "endpoints", "add", "--url", "https://a.example.com", "--filter", `type == "a"`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	stub.mu.Lock()
	defer stub.mu.Unlock()
	if !strings.Contains(stub.reqs[0], `"filter":"type == \"a\""`) || strings.Contains(stub.reqs[0], "transform") {
		t.Fatalf("request %s", stub.reqs[0])
	}
}

// endpoints test --type T --data JSON sends a test event of that type and
// payload; --data without --type is a usage error naming both.
func TestEndpointsTestWithATypeAndPayload(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, r.Method+" "+r.URL.Path+" "+strings.TrimSpace(string(b)))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1/endpoints/shop/test" {
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"event_id":"test_1"}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	runAgainst(t, srv, "endpoints", "test", "shop", "--type", "order.paid", "--data", `{"amount": 1200}`, "--wait", "0s")
	mu.Lock()
	got := strings.Join(bodies, "\n")
	mu.Unlock()
	if !strings.Contains(got, `POST /api/v1/endpoints/shop/test {"type":"order.paid","data":{"amount":1200}}`) {
		t.Fatalf("requests:\n%s", got)
	}
	code, _, errOut := runAgainst(t, srv, "endpoints", "test", "shop", "--data", `{}`)
	if code != 2 || !strings.Contains(errOut, "--data needs --type") {
		t.Fatalf("--data without --type: exit %d: %s", code, errOut)
	}
}

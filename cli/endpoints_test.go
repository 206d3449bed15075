package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// apiStub answers as the admin API does for bad input (400 with the field),
// unknown endpoints (404) and a create (201), and records each request.
type apiStub struct {
	mu   sync.Mutex
	reqs []string
}

func (s *apiStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	s.reqs = append(s.reqs, r.Method+" "+r.URL.RequestURI()+" "+string(b))
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.Contains(string(b), "ftp:"):
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"url: scheme must be http or https","field":"url"}`)
	case strings.Contains(string(b), `"retry"`):
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"must be between 1 and 1000, got 0","field":"retry.max_attempts"}`)
	case strings.Contains(string(b), `"ordering":"fifo"`):
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"error":"ordering: must be none or key, got \"fifo\"","field":"ordering"}`)
	case strings.Contains(r.URL.Path, "/nope"):
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":"unknown endpoint: \"nope\""}`)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/endpoints":
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, `{"id":"shop","secret":"whsec_abc","source":"api"}`)
	case r.URL.Path == "/api/v1/summary":
		_, _ = io.WriteString(w, `{"pending":0,"waiting_endpoints":0}`)
	case r.Method == http.MethodDelete:
		w.Header().Set("Hookjet-Discarded", "4")
		w.WriteHeader(http.StatusNoContent)
	default:
		_, _ = io.WriteString(w, `{"endpoints":[],"next":""}`)
	}
}

func runAgainst(t *testing.T, srv *httptest.Server, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(args, "--admin", srv.URL)
	err := Run(t.Context(), args, func(string) string { return "" }, &stdout, &stderr)
	code := ExitCode(err, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestEndpointsBadInputExits2NamingTheField(t *testing.T) {
	stub := &apiStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	tests := []struct {
		name  string
		args  []string
		code  int
		field string
	}{
		{"api refuses the url", []string{"endpoints", "add", "--url", "ftp://x"}, 2, "url: scheme"},
		{"api refuses a nested field", []string{"endpoints", "update", "shop", "--data", `{"retry":{"max_attempts":0}}`}, 2, "retry.max_attempts: must be"},
		{"add without --url", []string{"endpoints", "add", "--id", "x"}, 2, "--url is required"},
		{"update without an id", []string{"endpoints", "update"}, 2, "an endpoint id is required"},
		{"update without changes", []string{"endpoints", "update", "shop"}, 2, "nothing to change"},
		{"redeliver without --since", []string{"endpoints", "redeliver", "shop"}, 2, "--since is required"},
		{"bad --data", []string{"endpoints", "add", "--data", "{"}, 2, "--data"},
		{"api refuses --ordering", []string{"endpoints", "update", "shop", "--ordering", "fifo"}, 2, "ordering: must be none or key"},
		{"unknown endpoint is a runtime error", []string{"endpoints", "rm", "nope"}, 1, "unknown endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := runAgainst(t, srv, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.field) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q", code, stderr, tt.code, tt.field)
			}
		})
	}
}

func TestEndpointsAddSendsOnlyTheFlagsGiven(t *testing.T) {
	stub := &apiStub{}
	srv := httptest.NewServer(stub)
	defer srv.Close()
	code, stdout, stderr := runAgainst(t, srv, "endpoints", "add", "--url", "https://shop.example.com/", "--events", "order.*", "--events", "invoice.paid", "--tenant", "acme")
	if code != 0 || !strings.Contains(stdout, "shop") || !strings.Contains(stdout, "whsec_abc") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
	_, body, _ := strings.Cut(strings.SplitN(stub.reqs[0], " ", 3)[2], "")
	var got map[string]any
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got["url"] != "https://shop.example.com/" || got["tenant"] != "acme" || len(got["events"].([]any)) != 2 {
		t.Errorf("body %v", got)
	}
	code, stdout, _ = runAgainst(t, srv, "endpoints", "rm", "shop")
	if code != 0 || !strings.Contains(stdout, "4 waiting deliveries discarded") {
		t.Errorf("rm: exit %d %q", code, stdout)
	}
	code, _, _ = runAgainst(t, srv, "endpoints", "--tenant", "acme", "--limit", "5", "--after", "b")
	if last := stub.reqs[len(stub.reqs)-1]; code != 0 || !strings.Contains(last, "GET /api/v1/endpoints?after=b&limit=5&tenant=acme") {
		t.Errorf("list: exit %d, request %q", code, last)
	}
}

// A word the command does not take is a usage error (exit 2) and sends
// nothing: flags after it would otherwise be silently ignored, a --dry-run
// included.
func TestStrayArgumentsExit2AndSendNothing(t *testing.T) {
	for _, args := range [][]string{
		{"dlq", "replay", "--endpoint", "perm", "evt_r1", "--dry-run"},
		{"dlq", "stats", "extra"},
		{"status", "extra"},
		{"endpoints", "show", "a", "b"}, // "endpoints a b" is an unknown command: TestUnknownSubcommandIsNamed
		{"endpoints", "add", "--url", "http://127.0.0.1:9/x", "--events", "order.*", "lead.created"},
		{"endpoints", "show", "shop", "extra"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			stub := &apiStub{}
			srv := httptest.NewServer(stub)
			defer srv.Close()
			code, _, stderr := runAgainst(t, srv, args...)
			if code != 2 || !strings.Contains(stderr, "unexpected argument") {
				t.Fatalf("exit %d, stderr %q; want 2 and \"unexpected argument\"", code, stderr)
			}
			stub.mu.Lock()
			defer stub.mu.Unlock()
			if len(stub.reqs) != 0 {
				t.Fatalf("sent %v", stub.reqs)
			}
		})
	}
}

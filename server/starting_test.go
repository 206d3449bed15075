package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// While hookjet starts, a protected route checks the token
// before it says what start-up waits for.
func TestStartingChecksTokenFirst(t *testing.T) {
	h := &startingHandler{token: "s3cret"}
	h.waiting.Store(ptr("connecting to NATS"))
	for _, tt := range []struct {
		name, path, auth string
		code             int
		body             string
	}{
		{"protected without token", "/api/v1/summary", "", http.StatusUnauthorized, "bearer token"},
		{"protected with wrong token", "/metrics", "Bearer nope", http.StatusUnauthorized, "bearer token"},
		{"protected with token", "/api/v1/summary", "Bearer s3cret", http.StatusServiceUnavailable, "starting: connecting to NATS"},
		{"readyz needs none", "/readyz", "", http.StatusServiceUnavailable, "starting: connecting to NATS"},
		{"healthz needs none", "/healthz", "", http.StatusOK, `"ok"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodGet, tt.path, nil)
			if tt.auth != "" {
				req.Header.Set("Authorization", tt.auth)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.code || !strings.Contains(rec.Body.String(), tt.body) {
				t.Fatalf("%s: %d %s, want %d with %q", tt.path, rec.Code, rec.Body.String(), tt.code, tt.body)
			}
			if tt.code == http.StatusUnauthorized && strings.Contains(rec.Body.String(), "starting") {
				t.Fatalf("401 tells what start-up waits for: %s", rec.Body.String())
			}
		})
	}
}

package admin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The open admin listener refuses requests a web page could forge (a
// foreign Host from DNS rebinding, a cross-site Origin or Sec-Fetch-Site, a
// JSON body sent as text/plain or without a type) and lets the CLI, curl
// and the console's own forms through.
func TestOpenGuardRefusesWhatAPageCouldForge(t *testing.T) {
	reached := 0
	h := OpenGuard("127.0.0.1:8089", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		reached++
		w.WriteHeader(http.StatusCreated)
	}))
	const body = `{"url":"https://attacker.example/hook","events":[">"]}`
	tests := []struct {
		name, method, host, path, body string
		hdr                            map[string]string
		want                           int
		reason                         string // in the JSON error
	}{
		{"cli create", "POST", "127.0.0.1:8089", "/api/v1/endpoints", body, map[string]string{"Content-Type": "application/json"}, 201, ""},
		{"curl --json on localhost", "POST", "localhost:8089", "/api/v1/endpoints", body, map[string]string{"Content-Type": "application/json; charset=utf-8"}, 201, ""},
		{"ipv6 loopback", "GET", "[::1]:8089", "/api/v1/summary", "", nil, 201, ""},
		{"empty post", "POST", "127.0.0.1:8089", "/api/v1/endpoints/x/test", "", nil, 201, ""},
		{"console form same origin", "POST", "127.0.0.1:8089", "/console/endpoints/x/disable", "csrf=abc",
			map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "http://127.0.0.1:8089", "Sec-Fetch-Site": "same-origin"}, 201, ""},
		{"rebound host read", "GET", "rebind.attacker.example:8089", "/api/v1/endpoints", "", nil, 403, "Host"},
		{"rebound host create", "POST", "rebind.attacker.example:8089", "/api/v1/endpoints", body, map[string]string{"Content-Type": "application/json"}, 403, "Host"},
		{"cross-site origin", "POST", "127.0.0.1:8089", "/api/v1/endpoints", body,
			map[string]string{"Content-Type": "application/json", "Origin": "https://attacker.example"}, 403, "Origin"},
		{"null origin", "DELETE", "127.0.0.1:8089", "/api/v1/endpoints/x", "", map[string]string{"Origin": "null"}, 403, "Origin"},
		{"sec-fetch cross-site", "POST", "127.0.0.1:8089", "/api/v1/dlq/replay", "{}",
			map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "Sec-Fetch-Site"},
		{"sec-fetch same-site", "PATCH", "127.0.0.1:8089", "/api/v1/endpoints/x", "{}",
			map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "same-site"}, 403, "Sec-Fetch-Site"},
		{"text/plain body", "POST", "127.0.0.1:8089", "/api/v1/endpoints", body, map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, 415, "Content-Type"},
		{"untyped body", "POST", "127.0.0.1:8089", "/api/v1/endpoints", body, nil, 415, "Content-Type"},
		{"form body to the api", "POST", "127.0.0.1:8089", "/api/v1/dlq/replay", "a=b", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "Content-Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := reached
			req := httptest.NewRequest(tt.method, "http://"+tt.host+tt.path, strings.NewReader(tt.body))
			req.Host = tt.host
			if tt.body == "" {
				req.Body, req.ContentLength = http.NoBody, 0
			}
			for k, v := range tt.hdr {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Fatalf("%s %s Host %s: %d %s, want %d", tt.method, tt.path, tt.host, rec.Code, rec.Body, tt.want)
			}
			if tt.want != 201 {
				if reached != before {
					t.Error("the refused request reached the API")
				}
				var e struct{ Error string }
				if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || !strings.Contains(e.Error, tt.reason) {
					t.Errorf("error %q (%v) does not name %s", rec.Body, err, tt.reason)
				}
			}
		})
	}
}

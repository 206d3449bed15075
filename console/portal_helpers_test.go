package console

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// answer is an admin API handler that answers body as JSON.
func answer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body)
	}
}

// portalLink asks h (an AdminHandler) for a portal session, with body
// the JSON of POST /api/v1/portal/sessions, and returns its link.
func portalLink(t *testing.T, h http.Handler, body string) *url.URL {
	t.Helper()
	req := httptest.NewRequest("POST", "/api/v1/portal/sessions", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer admintoken")
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	var sess struct {
		URL string `json:"url"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &sess); err != nil || w.Code != http.StatusCreated {
		t.Fatalf("session: HTTP %d %s", w.Code, w.Body.String())
	}
	u, err := url.Parse(sess.URL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// serve sends h a GET of path (form nil), or a POST of form from a page of
// this origin, and returns the answer.
func serve(h http.Handler, path string, form url.Values) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	if form != nil {
		req = httptest.NewRequest("POST", path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", "http://"+req.Host)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

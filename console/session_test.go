package console

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestSessionSignedAndExpiring(t *testing.T) {
	s := signer{key: deriveKey([]byte("0123456789abcdef0123456789abcdef"), "test")}
	now := time.Unix(1_800_000_000, 0)
	tok := s.issue(session{Kind: kindPortal, Tenant: "acme", ReadOnly: true, Expires: now.Add(time.Hour).Unix()})
	got, err := s.check(tok, kindPortal, now)
	if err != nil || got.Tenant != "acme" || !got.ReadOnly {
		t.Fatalf("check = %+v, %v", got, err)
	}
	if _, err := s.check(tok, kindPortal, now.Add(time.Hour)); !errors.Is(err, errExpiredSession) {
		t.Fatalf("an hour later: %v, want expired", err)
	}
	if _, err := s.check(tok, kindConsole, now); !errors.Is(err, errBadSession) {
		t.Fatalf("as a console session: %v, want refused", err)
	}
	other := signer{key: deriveKey([]byte("0123456789abcdef0123456789abcdef"), "other")}
	if _, err := other.check(tok, kindPortal, now); !errors.Is(err, errBadSession) {
		t.Fatalf("another key: %v, want refused", err)
	}
	// Another tenant in the claims, with the old signature.
	payload, sig, _ := strings.Cut(tok, ".")
	forged := strings.Replace(payload, payload[:8], "eyJrIjoi", 1) + "." + sig
	if forged != tok {
		if _, err := s.check(forged, kindPortal, now); err == nil {
			t.Fatal("a changed payload was accepted")
		}
	}
	if _, err := s.check(payload+"."+sig[:len(sig)-2]+"AA", kindPortal, now); !errors.Is(err, errBadSession) {
		t.Fatalf("a changed signature: %v, want refused", err)
	}
	sess, _ := s.check(tok, kindPortal, now)
	if !s.checkCSRF(sess, s.csrf(sess)) || s.checkCSRF(sess, "") || s.checkCSRF(sess, s.csrf(session{Nonce: "x"})) {
		t.Fatal("CSRF token check")
	}
}

func TestBeforeSortsJustBeforeThePrefix(t *testing.T) {
	ids := []string{"a", "a-1", "a_", "ab", "ab0", "abc", "abd", "ac", "b", "z"}
	sort.Strings(ids)
	for _, prefix := range []string{"a", "ab", "abc", "b", "0", "a_", "zz"} {
		after := before(prefix)
		var first string
		for _, id := range ids {
			if id > after {
				first = id
				break
			}
		}
		var want string
		for _, id := range ids {
			if id >= prefix {
				want = id
				break
			}
		}
		if first != want {
			t.Errorf("before(%q) = %q: first id after it %q, want %q", prefix, after, first, want)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	tests := []struct {
		origin, site string
		want         bool
	}{
		{"", "", true},
		{"http://127.0.0.1:8089", "same-origin", true},
		{"", "none", true},
		{"http://evil.example", "cross-site", false},
		{"http://127.0.0.1:8089", "same-site", false},
		{"http://evil.example", "", false},
		{"null", "", false},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1:8089/console/x", nil)
		if tt.origin != "" {
			r.Header.Set("Origin", tt.origin)
		}
		if tt.site != "" {
			r.Header.Set("Sec-Fetch-Site", tt.site)
		}
		if got := sameOrigin(r); got != tt.want {
			t.Errorf("Origin %q, Sec-Fetch-Site %q: %v, want %v", tt.origin, tt.site, got, tt.want)
		}
	}
}

func TestTemplatesParse(t *testing.T) {
	tm, err := loadTemplates()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"overview", "endpoints", "endpoint", "event", "dlq", "login", "secret", "confirm", "error", "portal_home", "portal_endpoint", "portal_delete", "portal_types", "portal_events", "portal_event"} {
		if tm[name] == nil {
			t.Errorf("no template %s", name)
		}
	}
}

func TestLatencyChart(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	c := latencyChart([]attempt{
		{StartedAt: t0.Add(2 * time.Second), DurationMS: 40, Class: "transient", Status: 503},
		{StartedAt: t0.Add(time.Second), DurationMS: 12, Class: "success", Status: 200},
		{StartedAt: t0, DurationMS: 8, Class: "success", Status: 200},
		{StartedAt: t0, Class: "dead_letter"},
	})
	if c.Empty || len(c.Points) != 3 {
		t.Fatalf("points = %+v", c.Points)
	}
	if c.Points[0].X != chartLeft || c.Points[2].X != chartW-chartRight {
		t.Fatalf("oldest at x=%v, newest at x=%v", c.Points[0].X, c.Points[2].X)
	}
	if c.YTicks[4].Label != "50 ms" || c.Points[2].Y != float64(chartTop)+float64(c.Bottom-chartTop)*(1-40.0/50) {
		t.Fatalf("y scale: ticks %+v, point %+v", c.YTicks, c.Points[2])
	}
	if c.Points[2].OK || !c.Points[0].OK || strings.Count(c.Line, ",") != 2 {
		t.Fatalf("classes or line: %+v %q", c.Points, c.Line)
	}
	if !latencyChart(nil).Empty {
		t.Fatal("no attempts: want an empty chart")
	}
}

func TestRefreshRendered(t *testing.T) {
	tm, err := loadTemplates()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p := &page{Title: "x", Area: "console", Static: "/console/static", Refresh: 2, Data: overviewData{AttentionPending: true}}
	if err := tm["overview"].ExecuteTemplate(&b, "layout", p); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<meta http-equiv="refresh" content="2">`) || !strings.Contains(b.String(), "reloads in a moment") {
		t.Fatalf("pending overview:\n%s", b.String())
	}
}

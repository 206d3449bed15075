package console

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

// Someone guessing the admin token from one address runs out of tries;
// the operator signing in from another address is not locked out.
func TestSignInLimiterCountsPerClientAddress(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	c, err := New(Options{API: http.NotFoundHandler(), Token: "the-admin-token", SecretKey: []byte("0123456789abcdef0123456789abcdef"), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := c.AdminHandler()
	signIn := func(remote, token string) int {
		form := url.Values{"token": {token}, "next": {"/console/"}}
		req := httptest.NewRequest("POST", "http://127.0.0.1:8089/console/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = remote
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code
	}
	codes := map[int]int{}
	for range 30 {
		codes[signIn("203.0.113.7:40000", "guess")]++
	}
	if codes[http.StatusTooManyRequests] == 0 {
		t.Fatalf("30 wrong tokens from one address at once: %v, want some 429", codes)
	}
	if got := signIn("203.0.113.7:40001", "the-admin-token"); got != http.StatusTooManyRequests {
		t.Errorf("the guessing address signs in with the right token: %d, want 429 until its tries refill", got)
	}
	if got := signIn("198.51.100.2:5000", "the-admin-token"); got != http.StatusSeeOther {
		t.Errorf("the operator from another address: %d, want 303 (signed in)", got)
	}
	if got := signIn("[2001:db8:1:2::99]:5000", "guess"); got != http.StatusUnauthorized {
		t.Errorf("a first wrong token from an IPv6 address: %d, want 401", got)
	}
	now = now.Add(10 * time.Second)
	if got := signIn("203.0.113.7:40002", "the-admin-token"); got != http.StatusSeeOther {
		t.Errorf("the first address after its tries refilled: %d, want 303", got)
	}
}

// The table of client addresses stays bounded whatever the number of
// addresses failing.
func TestSignInLimiterMemoryIsBounded(t *testing.T) {
	l := newLoginLimiter()
	now := time.Unix(1_800_000_000, 0)
	for i := range 3 * maxLoginClients {
		l.failed(fmt.Sprintf("10.%d.%d.%d:1", i>>16&255, i>>8&255, i&255), now)
	}
	if n := l.size(); n > maxLoginClients {
		t.Fatalf("%d addresses held, want at most %d", n, maxLoginClients)
	}
	// A client that keeps failing is still limited after the churn.
	for range loginBurst + 1 {
		l.failed("192.0.2.1:1", now)
	}
	if !l.blocked("192.0.2.1:2", now) {
		t.Error("an address past its burst is not blocked")
	}
}

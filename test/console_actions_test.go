package test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// browserless is a client of the console's pages that keeps the session
// cookie and sends forms with the page's CSRF token, as a browser would.
type browserless struct {
	t            *testing.T
	base         string
	client       *http.Client
	cookie       *http.Cookie
	lastLocation string
}

// atomicString is a string shared with a receiver's goroutine.
type atomicString struct {
	mu sync.Mutex
	s  string
}

func (a *atomicString) get() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.s
}

func (a *atomicString) set(s string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.s = s
}

func (b *browserless) get(path string) (int, string) {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.base+path, nil)
	return b.do(req)
}

// post sends form to path with the CSRF token of the page at from.
func (b *browserless) post(from, path string, form url.Values) (int, string, string) {
	b.t.Helper()
	_, page := b.get(from)
	form.Set("csrf", csrfOf(b.t, page))
	req, _ := http.NewRequest("POST", b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", b.base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	code, body := b.do(req)
	return code, body, b.lastLocation
}

func (b *browserless) do(req *http.Request) (int, string) {
	b.t.Helper()
	if b.cookie != nil {
		req.AddCookie(b.cookie)
	}
	resp, err := b.client.Do(req)
	if err != nil {
		b.t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	for _, c := range resp.Cookies() {
		if c.Name == "hookjet_console" {
			b.cookie = c
		}
	}
	b.lastLocation = resp.Header.Get("Location")
	return resp.StatusCode, string(body)
}

// TestConsoleActionsOverHTTP runs the endpoint page's and the portal's
// buttons against a real hookjet and checks their effect through the API
// and at the receiver.
func TestConsoleActionsOverHTTP(t *testing.T) {
	var refuse atomicString
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		if d.ID == refuse.get() {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	cfg := testConfig(t, t.TempDir(), "")
	h := startHookjet(t, cfg, cli.Options{})
	h.createAPIEndpoint("shop", r.URL, "order.*")
	if code := h.api("PATCH", "/api/v1/endpoints/shop", "", map[string]any{"tenant": "acme"}, nil); code != http.StatusOK {
		t.Fatalf("tenant: %d", code)
	}
	b := &browserless{t: t, base: "http://" + h.srv.AdminAddr(),
		client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(b.client.CloseIdleConnections)
	const page = "/console/endpoints/shop"

	code, _, loc := b.post(page, page+"/edit", url.Values{"url": {r.URL}, "events": {"order.* invoice.*"}, "tenant": {"acme"}, "owner": {"ops"}, "description": {"edited"}})
	var ep struct {
		Events      []string `json:"events"`
		Owner       string   `json:"owner"`
		Description string   `json:"description"`
		Secrets     int      `json:"secrets"`
		Disabled    bool     `json:"disabled"`
	}
	h.api("GET", "/api/v1/endpoints/shop", "", nil, &ep)
	if code != http.StatusSeeOther || loc != page+"?done=updated" || ep.Description != "edited" || ep.Owner != "ops" || len(ep.Events) != 2 {
		t.Fatalf("edit: %d %s, endpoint %+v", code, loc, ep)
	}
	for _, action := range []string{"disable", "enable"} {
		code, _, loc := b.post(page, page+"/"+action, url.Values{})
		h.api("GET", "/api/v1/endpoints/shop", "", nil, &ep)
		if code != http.StatusSeeOther || loc != page+"?done="+action+"d" || ep.Disabled != (action == "disable") {
			t.Fatalf("%s: %d %s, disabled %v", action, code, loc, ep.Disabled)
		}
	}

	// Redeliver: a dry run counts, the confirmation sends.
	h.publishFor("acme", "order.created", "ord-1", []byte(`{}`)) // shop is tenant acme's
	r.waitFor(t, "ord-1")
	code, body, _ := b.post(page, page+"/redeliver", url.Values{"since": {"1h"}})
	if code != http.StatusOK || !strings.Contains(body, `<strong class="matched">1</strong>`) || r.requestsFor("ord-1") != 1 {
		t.Fatalf("redeliver dry run: %d, matched 1: %v, ord-1 sent %d times", code, strings.Contains(body, `class="matched">1<`), r.requestsFor("ord-1"))
	}
	code, _, loc = b.post(page, page+"/redeliver", url.Values{"since": {"1h"}, "step": {"confirm"}})
	if code != http.StatusSeeOther || loc != page+"?done=redelivered" {
		t.Fatalf("redeliver: %d %s", code, loc)
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := r.requestsFor("ord-1"); n != 2 {
			return fmt.Errorf("ord-1 sent %d times, want 2", n)
		}
		return nil
	})

	portalActions(t, h, r, &refuse)

	// Rotations last: the receiver checks the two test secrets.
	code, body, _ = b.post(page, page+"/rotate", url.Values{"grace": {"1h"}})
	h.api("GET", "/api/v1/endpoints/shop", "", nil, &ep)
	if code != http.StatusOK || !strings.Contains(body, `<code id="secret">whsec_`) || ep.Secrets != 4 {
		t.Fatalf("rotate: %d, secret shown %v, %d secrets", code, strings.Contains(body, "whsec_"), ep.Secrets)
	}
	if _, again := b.get(page); strings.Contains(again, "whsec_") {
		t.Fatal("the endpoint page shows a secret after the rotation")
	}

	code, _, loc = b.post(page, page+"/delete", url.Values{})
	if code != http.StatusSeeOther || loc != "/console/endpoints?done=deleted" || h.api("GET", "/api/v1/endpoints/shop", "", nil, nil) != http.StatusNotFound {
		t.Fatalf("delete: %d %s", code, loc)
	}
}

// portalActions: a portal session's test event, rotation and replay of a
// dead letter (dry run, then confirmed).
func portalActions(t *testing.T, h *hookjet, r *receiver, refuse *atomicString) {
	link := portalLink(t, h, map[string]any{"tenant": "acme"})
	base := "http://" + h.srv.AdminAddr()
	p := &browserless{t: t, base: base, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(p.client.CloseIdleConnections)
	ep := strings.TrimPrefix(link, base) + "endpoints/shop"
	code, _, loc := p.post(ep, ep+"/test", url.Values{})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, ep+"?done=test&event=") {
		t.Fatalf("portal test: %d %s", code, loc)
	}
	event, _ := url.QueryUnescape(strings.TrimPrefix(loc, ep+"?done=test&event="))
	r.waitFor(t, event)
	refuse.set("ord-2")
	h.publishFor("acme", "order.created", "ord-2", []byte(`{}`))
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := len(h.dlq("?endpoint=shop")); n != 1 {
			return fmt.Errorf("%d dead letters", n)
		}
		return nil
	})
	refuse.set("")
	code, body, _ := p.post(ep, ep+"/replay", url.Values{})
	if code != http.StatusOK || !strings.Contains(body, `<strong class="matched">1</strong>`) {
		t.Fatalf("portal replay dry run: %d\n%s", code, body)
	}
	code, _, loc = p.post(ep, ep+"/replay", url.Values{"step": {"confirm"}})
	if code != http.StatusSeeOther || loc != ep+"?done=replayed" {
		t.Fatalf("portal replay: %d %s", code, loc)
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := r.requestsFor("ord-2"); n != 2 {
			return fmt.Errorf("ord-2 sent %d times, want 2 (refused, then replayed)", n)
		}
		return nil
	})
	code, body, _ = p.post(ep, ep+"/rotate", url.Values{})
	if code != http.StatusOK || !strings.Contains(body, `<code id="secret">whsec_`) {
		t.Fatalf("portal rotate: %d", code)
	}
}

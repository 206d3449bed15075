package test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/testkit"
)

// The console and portal in a real browser: headless Chromium driven by
// chromedp against an in-process hookjet. HOOKJET_SCREENSHOTS=1 saves PNGs
// of the main pages to docs/screenshots/ (the README shows them).

const consoleToken = "console-admin-token-0123456789"

// browser starts headless Chromium with a fresh profile and returns a tab's
// context; t.Cleanup closes the browser. Without Chromium the test is
// skipped, except under CI (CI set), where it fails.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := os.Getenv("HOOKJET_CHROMIUM")
	if path == "" {
		path = "/usr/bin/chromium"
	}
	if _, err := exec.LookPath(path); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("chromium not found at %s (apt-get install chromium): %v", path, err)
		}
		t.Skipf("chromium not found at %s (apt-get install chromium; or set HOOKJET_CHROMIUM): %v", path, err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1360, 1000),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	ctx, cancelTime := context.WithTimeout(ctx, 100*time.Second)
	t.Cleanup(func() {
		cancelTime()
		cancelTab()
		cancelAlloc()
	})
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		t.Fatalf("start chromium: %v", err)
	}
	// A JavaScript dialog is what an injected alert() would open: it fails
	// the test (and blocks the page, so the next step fails too).
	if err := chromedp.Listen(ctx, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			t.Errorf("the page opened a JavaScript %s dialog: %q", d.Type, d.Message)
		}
	}); err != nil {
		t.Fatalf("listen to the page's events: %v", err)
	}
	return ctx
}

// run runs browser actions, failing the test with what was being done.
func run(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		browserFail(t, ctx, what, err)
	}
}

// value runs an action that returns a value.
func value[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		browserFail(t, ctx, what, err)
	}
	return v
}

// text is the text of the first element sel matches, once there is one.
// A node found just before a navigation replaced the document is looked up
// again.
func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	var s string
	var err error
	for range 20 {
		if s, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel))); err == nil || !strings.Contains(err.Error(), "No node") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		browserFail(t, ctx, "read "+sel, err)
	}
	return s
}

func browserFail(t *testing.T, ctx context.Context, what string, err error) {
	t.Helper()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	loc, _ := chromedp.Run(short, chromedp.Location())
	body, _ := chromedp.Run(short, chromedp.Text(chromedp.CSS("body")))
	t.Fatalf("%s: %v\nat %s:\n%.2000s", what, err, loc, body)
}

// screenshot saves the page as docs/screenshots/<name>.png when
// HOOKJET_SCREENSHOTS is set.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("HOOKJET_SCREENSHOTS") == "" {
		return
	}
	png := value(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
	dir := filepath.Join("..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// secretReceiver verifies signatures with a secret set once the console
// has shown it, and answers with status.
type secretReceiver struct {
	*httptest.Server
	t      *testing.T
	mu     sync.Mutex
	secret string
	status int
	got    []string // "type id" of each verified request
}

func newSecretReceiver(t *testing.T, status int) *secretReceiver {
	r := &secretReceiver{t: t, status: status}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
		if r.secret != "" {
			key := testkit.RefKey(t, r.secret)
			if !strings.Contains(" "+req.Header.Get("webhook-signature")+" ", " "+testkit.RefSign(key, id, ts, body)+" ") {
				t.Errorf("receiver: request %s not signed with the secret the console showed", id)
			}
		}
		var ev struct {
			Type string `json:"type"`
		}
		_ = json.Unmarshal(body, &ev)
		r.got = append(r.got, ev.Type+" "+id)
		w.WriteHeader(r.status)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *secretReceiver) set(secret string, status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret, r.status = secret, status
}

func (r *secretReceiver) received() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// xss is an endpoint description that runs script if anything renders it
// as HTML.
const xss = `<img src=x onerror="alert('xss')"><script>alert('xss')</script>"'><b>bold</b>`

func TestConsoleInBrowser(t *testing.T) {
	ctx := browser(t)
	bad := newSecretReceiver(t, http.StatusBadRequest)
	bad.set(secretA, http.StatusBadRequest)
	framer := newFramer(t)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "billing", URL: bad.URL, Events: []string{"invoice.*"}})
	cfg.Admin.Token = config.NewSecret(consoleToken)
	cfg.Portal.Listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg.Portal.FrameAncestors = []string{framer.URL}
	h := startHookjet(t, cfg, cli.Options{})
	base := "http://" + h.srv.AdminAddr()

	// Login: the console asks for the admin token and refuses a wrong one.
	var title, errText string
	run(t, ctx, "open the console",
		chromedp.Navigate(base+"/console/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)))
	screenshot(t, ctx, "login")
	run(t, ctx, "sign in with a wrong token",
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), "wrong"),
		chromedp.Submit(chromedp.CSS(`input[name=token]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.error`)))
	errText = text(t, ctx, `p.error`)
	if !strings.Contains(errText, "not the admin token") {
		t.Fatalf("wrong token: error %q", errText)
	}
	run(t, ctx, "sign in",
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), consoleToken),
		chromedp.Submit(chromedp.CSS(`input[name=token]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.figures`)))
	title = value(t, ctx, "title", chromedp.Title())
	if title != "Overview · hookjet" {
		t.Fatalf("after sign-in: title %q", title)
	}

	// Creating an endpoint shows its secret once; the description is
	// hostile.
	shop := newSecretReceiver(t, http.StatusOK)
	var secret string
	run(t, ctx, "create an endpoint",
		chromedp.Navigate(base+"/console/endpoints"),
		chromedp.Click(chromedp.CSS(`details.card summary`)),
		chromedp.SendKeys(chromedp.CSS(`form[method=post][action="/console/endpoints"] input[name=url]`), shop.URL+"/hooks"),
		chromedp.SendKeys(chromedp.CSS(`form[method=post][action="/console/endpoints"] input[name=id]`), "shop"),
		chromedp.SendKeys(chromedp.CSS(`form[method=post][action="/console/endpoints"] input[name=tenant]`), "acme"),
		chromedp.SendKeys(chromedp.CSS(`form[method=post][action="/console/endpoints"] input[name=owner]`), "payments-team"),
		chromedp.SendKeys(chromedp.CSS(`form[method=post][action="/console/endpoints"] input[name=description]`), xss),
		chromedp.Submit(chromedp.CSS(`form[method=post][action="/console/endpoints"] input[name=url]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	secret = text(t, ctx, `#secret`)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("secret page shows %q", secret)
	}
	shop.set(secret, http.StatusOK)

	// The XSS attempt stays text: the description reads as typed, no
	// element or script came out of it (and no dialog opened: browser()).
	var desc, descHTML string
	var injected int
	run(t, ctx, "open the endpoint",
		chromedp.Navigate(base+"/console/endpoints/shop"),
		chromedp.WaitVisible(chromedp.CSS(`p.description`)))
	desc = text(t, ctx, `p.description`)
	descHTML = value(t, ctx, "description HTML", chromedp.InnerHTML(chromedp.CSS(`p.description`)))
	injected = value(t, ctx, "count injected elements", chromedp.Evaluate[int](`document.querySelectorAll('p.description *').length + document.querySelectorAll('img[src=x]').length`))
	if desc != xss || injected != 0 || strings.Contains(descHTML, "<img") {
		t.Fatalf("description rendered as %q (HTML %q, %d injected elements), want the text %q", desc, descHTML, injected, xss)
	}

	// A test event reaches the receiver, signed with the shown secret,
	// and its attempt appears on the endpoint's page.
	var flashText string
	run(t, ctx, "send a test event",
		chromedp.Click(chromedp.CSS(`form[action="/console/endpoints/shop/test"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	flashText = text(t, ctx, `p.flash`)
	if !strings.Contains(flashText, "Test event") {
		t.Fatalf("after the test button: %q", flashText)
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		for _, g := range shop.received() {
			if strings.HasPrefix(g, "hookjet.test ") {
				return nil
			}
		}
		return fmt.Errorf("the receiver got %v, no hookjet.test", shop.received())
	})
	// Some traffic for the latency chart.
	for i := range 20 {
		h.publishFor("acme", "order.created", fmt.Sprintf("order-%d", i), []byte(`{"order":1}`)) // shop is tenant acme's
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if n := len(shop.received()); n < 21 {
			return fmt.Errorf("shop received %d of 21", n)
		}
		return nil
	})
	checkAttemptShown(t, ctx, base+"/console/endpoints/shop")
	if main := text(t, ctx, `main`); !strings.Contains(main, "Owner\npayments-team") || !strings.Contains(main, "Last test\nsuccess 200") {
		t.Fatalf("the endpoint page does not show its owner or its last test:\n%s", main)
	}
	screenshot(t, ctx, "endpoint")

	// A dead letter: billing answers 400 (permanent), then recovers and
	// the console replays it after a dry run.
	h.publish("invoice.paid", "inv-1", []byte(`{"invoice":1}`))
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if n := len(h.dlq("?endpoint=billing")); n != 1 {
			return fmt.Errorf("%d dead letters of billing", n)
		}
		return nil
	})
	bad.set(secretA, http.StatusOK)
	run(t, ctx, "browse the dead letters",
		chromedp.Navigate(base+"/console/"),
		chromedp.WaitVisible(chromedp.CSS(`table.endpoints`)))
	screenshot(t, ctx, "overview")
	var matched string
	run(t, ctx, "dry run of a replay",
		chromedp.Navigate(base+"/console/dlq?endpoint=billing"),
		chromedp.WaitVisible(chromedp.CSS(`table.dlq td.id`)))
	screenshot(t, ctx, "dlq")
	run(t, ctx, "dry run of a replay",
		chromedp.Click(chromedp.CSS(`form[action="/console/dlq/replay"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`strong.matched`)))
	matched = text(t, ctx, `strong.matched`)
	if matched != "1" {
		t.Fatalf("dry run matched %q, want 1", matched)
	}
	if got := bad.received(); len(got) != 1 {
		t.Fatalf("the dry run sent something: the receiver got %v", got)
	}
	run(t, ctx, "confirm the replay",
		chromedp.Click(chromedp.CSS(`form[action="/console/dlq/replay"] button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	flashText = text(t, ctx, `p.flash`)
	if !strings.Contains(flashText, "replayed") {
		t.Fatalf("after confirming: %q", flashText)
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if got := bad.received(); len(got) != 2 || got[1] != " inv-1" {
			return fmt.Errorf("billing received %v, want inv-1 again", got)
		}
		if n := len(h.dlq("?endpoint=billing")); n != 0 {
			return fmt.Errorf("%d dead letters left", n)
		}
		return nil
	})

	// The event's page: its delivery to billing with both attempts, the
	// refused one and the replay.
	checkFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		if err := chromedp.Do(ctx, chromedp.Navigate(base+"/console/events/inv-1"), chromedp.WaitVisible(chromedp.CSS(`table.attempts`))); err != nil {
			return err
		}
		main, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`main`)))
		if err != nil {
			return err
		}
		if !strings.Contains(main, "billing") || !strings.Contains(main, "permanent") || !strings.Contains(main, "replay") || !strings.Contains(main, "success") {
			return fmt.Errorf("the event page does not show both attempts yet:\n%s", main)
		}
		return nil
	})
	screenshot(t, ctx, "event")

	portalInBrowser(t, ctx, h, framer)
}

// checkAttemptShown waits until the endpoint page lists a successful test
// attempt from the delivery log.
func checkAttemptShown(t *testing.T, ctx context.Context, url string) {
	t.Helper()
	checkFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS(`table.attempts, p.muted`))); err != nil {
			return err
		}
		rows, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`main`)))
		if err != nil {
			return err
		}
		if !strings.Contains(rows, "hookjet.test") || !strings.Contains(rows, "success") {
			return fmt.Errorf("no successful hookjet.test attempt on the page yet")
		}
		return nil
	})
}

// portalSeesOnlyItsTenant: the portal's endpoint made with the widest
// pattern (no events: every event) shows its tenant's event, and never
// another tenant's event, delivered or dead-lettered at that tenant's
// endpoints, on any of the session's pages.
func portalSeesOnlyItsTenant(t *testing.T, ctx context.Context, h *hookjet, link, portalEP string) {
	if portalEP == "" {
		t.Fatal("the endpoint created in the portal is not listed")
	}
	gone := newSecretReceiver(t, http.StatusGone)
	if code := h.api("POST", "/api/v1/endpoints", consoleToken, map[string]any{"id": "globex-gone", "url": gone.URL, "tenant": "globex", "events": []string{">"}}, nil); code != http.StatusCreated {
		t.Fatalf("create globex-gone: HTTP %d", code)
	}
	h.publishFor("globex", "invoice.paid", "globex-secret-1", []byte(`{"card":"4242-globex"}`))
	h.publishFor("acme", "invoice.paid", "acme-visible-1", []byte(`{"card":"acme"}`))
	checkFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if n := len(h.dlq("?endpoint=globex-gone")); n == 0 {
			return fmt.Errorf("globex's event not dead-lettered at globex-gone yet")
		}
		return nil
	})
	var page string
	checkFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		run(t, ctx, "open the portal's own endpoint",
			chromedp.Navigate(link+"endpoints/"+portalEP),
			chromedp.WaitVisible(chromedp.CSS(`table.dlq`)))
		page = text(t, ctx, `body`)
		if !strings.Contains(page, "acme-visible-1") {
			return fmt.Errorf("acme's event is not on its endpoint's page yet")
		}
		return nil
	})
	run(t, ctx, "the portal's home", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`table.endpoints`)))
	page += text(t, ctx, `body`)
	for _, leak := range []string{"globex-secret-1", "4242-globex", "globex-gone"} {
		if strings.Contains(page, leak) {
			t.Fatalf("the acme portal shows %q of tenant globex", leak)
		}
	}
}

// portalInBrowser: a portal session sees its tenant's endpoints only,
// creates one in its tenant, and is refused once expired.
func portalInBrowser(t *testing.T, ctx context.Context, h *hookjet, framer *httptest.Server) {
	other := newSecretReceiver(t, http.StatusOK)
	if code := h.api("POST", "/api/v1/endpoints", consoleToken, map[string]any{"id": "globex-crm", "url": other.URL, "tenant": "globex"}, nil); code != http.StatusCreated {
		t.Fatalf("create globex-crm: HTTP %d", code)
	}
	link := portalLink(t, h, map[string]any{"tenant": "acme", "ttl": "1h"})
	if !strings.HasPrefix(link, "http://"+h.srv.PortalAddr()+"/portal/s/") {
		t.Fatalf("portal link %q is not on portal.listen (%s)", link, h.srv.PortalAddr())
	}
	var listed string
	run(t, ctx, "open the portal",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`table.endpoints`)))
	listed = text(t, ctx, `table.endpoints`)
	if !strings.Contains(listed, "shop") || strings.Contains(listed, "globex") || strings.Contains(listed, "billing") {
		t.Fatalf("the acme portal lists %q", listed)
	}
	var secret string
	run(t, ctx, "create an endpoint in the portal",
		chromedp.SendKeys(chromedp.CSS(`input[name=url]`), other.URL+"/acme"),
		chromedp.SendKeys(chromedp.CSS(`input[name=description]`), "created in the portal"),
		chromedp.Submit(chromedp.CSS(`input[name=url]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	secret = text(t, ctx, `#secret`)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("portal secret page shows %q", secret)
	}
	var list struct {
		Endpoints []struct{ ID, Tenant, Description string } `json:"endpoints"`
	}
	h.api("GET", "/api/v1/endpoints?tenant=acme", consoleToken, nil, &list)
	if len(list.Endpoints) != 2 {
		t.Fatalf("acme has %+v, want shop and the portal's endpoint", list.Endpoints)
	}
	run(t, ctx, "back to the list",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`table.endpoints`)))
	screenshot(t, ctx, "portal")
	var portalEP string
	for _, e := range list.Endpoints {
		if e.Description == "created in the portal" {
			portalEP = e.ID
		}
	}
	portalSeesOnlyItsTenant(t, ctx, h, link, portalEP)

	// Another tenant's endpoint does not exist for this session.
	// portal.listen serves the portal and nothing else.
	for _, path := range []string{"/api/v1/summary", "/api/v1/endpoints", "/console/", "/metrics"} {
		if code := statusWith(t, offAPI, "GET", "http://"+h.srv.PortalAddr()+path); code != http.StatusNotFound {
			t.Errorf("portal.listen answers %s with %d, want 404", path, code)
		}
	}
	if code := statusWith(t, offAPI, "POST", "http://"+h.srv.PortalAddr()+"/api/v1/portal/sessions"); code != http.StatusNotFound {
		t.Errorf("portal.listen answers POST /api/v1/portal/sessions with %d, want 404", code)
	}

	var msg string
	run(t, ctx, "open another tenant's endpoint",
		chromedp.Navigate(link+"endpoints/globex-crm"),
		chromedp.WaitVisible(chromedp.CSS(`p.error`)))
	msg = text(t, ctx, `p.error`)
	if !strings.Contains(msg, "no endpoint globex-crm") {
		t.Fatalf("globex-crm in the acme portal: %q", msg)
	}
	if code := httpStatus(t, "GET", link+"endpoints/globex-crm"); code != http.StatusNotFound {
		t.Fatalf("globex-crm in the acme portal: HTTP %d, want 404", code)
	}

	// The customer's app (portal.frame_ancestors) may frame the portal;
	// no page may frame the console.
	if got := framed(t, ctx, framer, link); got != link {
		t.Fatalf("the portal in a frame of %s (portal.frame_ancestors) loaded %q", framer.URL, got)
	}
	if got := framed(t, ctx, framer, "http://"+h.srv.AdminAddr()+"/console/login"); !strings.HasPrefix(got, "chrome-error:") {
		t.Fatalf("the console in a frame loaded %q, want it refused (frame-ancestors 'none')", got)
	}

	// An expired link is refused.
	short := portalLink(t, h, map[string]any{"tenant": "acme", "ttl": "1s"})
	checkFor(t, 10*time.Second, 200*time.Millisecond, func() error {
		if code := httpStatus(t, "GET", short); code != http.StatusUnauthorized {
			return fmt.Errorf("HTTP %d, want 401 once expired", code)
		}
		return nil
	})
	run(t, ctx, "open an expired link",
		chromedp.Navigate(short),
		chromedp.WaitVisible(chromedp.CSS(`p.error`)))
	msg = text(t, ctx, `p.error`)
	if !strings.Contains(msg, "expired") {
		t.Fatalf("expired link shows %q", msg)
	}
}

// portalLink asks the admin API for a portal session.
func portalLink(t testing.TB, h *hookjet, body map[string]any) string {
	t.Helper()
	var res struct {
		URL       string `json:"url"`
		ExpiresAt string `json:"expires_at"`
	}
	if code := h.api("POST", "/api/v1/portal/sessions", consoleToken, body, &res); code != http.StatusCreated || res.URL == "" {
		t.Fatalf("portal session %v: HTTP %d %+v", body, code, res)
	}
	return res.URL
}

func httpStatus(t *testing.T, method, url string) int {
	t.Helper()
	return statusWith(t, http.DefaultClient, method, url)
}

// offAPI is a client for listeners that are not the admin API the OpenAPI
// document describes (portal.listen, publish.listen): its requests go
// around the tests' validating transport.
var offAPI = &http.Client{Transport: &http.Transport{}}

// statusWith is httpStatus through c.
func statusWith(t *testing.T, c *http.Client, method, url string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestConsoleSecurityOverHTTP checks, without a browser, what a browser
// relies on: the security headers, the login, CSRF and origin checks on
// every form, signed cookies, portal sessions' validation, read-only
// sessions, frame-ancestors, and that no configured secret is rendered.
func TestConsoleSecurityOverHTTP(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "billing", URL: "http://127.0.0.1:9/", Extra: "    tenant: acme\n"})
	cfg.Admin.Token = config.NewSecret(consoleToken)
	cfg.Portal.FrameAncestors = []string{"https://app.example.com"}
	h := startHookjet(t, cfg, cli.Options{})
	base := "http://" + h.srv.AdminAddr()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	t.Cleanup(client.CloseIdleConnections)
	do := func(method, path string, form url.Values, hdr map[string]string) (*http.Response, string) {
		t.Helper()
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, base+path, body)
		if err != nil {
			t.Fatal(err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	resp, _ := do("GET", "/console/", nil, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/console/login") {
		t.Fatalf("console without a session: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	resp, _ = do("GET", "/console/login", nil, nil)
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || !strings.Contains(csp, "style-src 'self'") || strings.Contains(csp, "unsafe") ||
		!strings.Contains(csp, "frame-ancestors 'none'") || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
		resp.Header.Get("Referrer-Policy") == "" || resp.Header.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("console headers: %v", resp.Header)
	}
	login := url.Values{"token": {consoleToken}, "next": {"/console/"}}
	if resp, _ = do("POST", "/console/login", login, map[string]string{"Origin": "http://evil.example"}); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Fatalf("cross-origin login: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	resp, _ = do("POST", "/console/login", login, map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"})
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Secure || ck.MaxAge <= 0 {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, expiring (not Secure over plain HTTP)", ck)
	}
	cookie := map[string]string{"Cookie": ck.Name + "=" + ck.Value}
	forged := map[string]string{"Cookie": ck.Name + "=" + strings.Replace(ck.Value, ".", "x.", 1)}
	if resp, _ = do("GET", "/console/", nil, forged); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("a forged cookie: %d, want the login", resp.StatusCode)
	}
	resp, page := do("GET", "/console/endpoints/billing", nil, cookie)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("endpoint page: %d", resp.StatusCode)
	}
	for _, s := range []string{secretA, secretB, consoleToken} {
		if strings.Contains(page, s) {
			t.Fatalf("the endpoint page shows a secret or the token")
		}
	}
	csrf := csrfOf(t, page)
	same := map[string]string{"Cookie": cookie["Cookie"], "Origin": base, "Sec-Fetch-Site": "same-origin"}
	cross := map[string]string{"Cookie": cookie["Cookie"], "Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"}
	for name, tc := range map[string]struct {
		form url.Values
		hdr  map[string]string
	}{
		"no CSRF token":    {url.Values{}, same},
		"wrong CSRF token": {url.Values{"csrf": {csrf + "x"}}, same},
		"cross-site":       {url.Values{"csrf": {csrf}}, cross},
		"no session":       {url.Values{"csrf": {csrf}}, map[string]string{"Origin": base}},
	} {
		if resp, _ := do("POST", "/console/endpoints/billing/disable", tc.form, tc.hdr); resp.StatusCode != http.StatusForbidden {
			t.Errorf("disable with %s: %d, want 403", name, resp.StatusCode)
		}
	}
	var ep struct {
		Disabled bool `json:"disabled"`
	}
	if h.api("GET", "/api/v1/endpoints/billing", consoleToken, nil, &ep); ep.Disabled {
		t.Fatal("a refused form disabled the endpoint")
	}
	if resp, _ = do("POST", "/console/endpoints/billing/disable", url.Values{"csrf": {csrf}}, same); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("disable: %d", resp.StatusCode)
	}
	if h.api("GET", "/api/v1/endpoints/billing", consoleToken, nil, &ep); !ep.Disabled {
		t.Fatal("the console's disable did not disable the endpoint")
	}

	portalSessionsRefuseBadInput(t, h)
	portalReadOnlyAndFramed(t, h, do)
}

// csrfOf reads the CSRF token of a page's forms.
func csrfOf(t *testing.T, page string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, `name="csrf" value="`)
	tok, _, ok2 := strings.Cut(rest, `"`)
	if !ok || !ok2 || tok == "" {
		t.Fatal("no CSRF token on the page")
	}
	return tok
}

func portalSessionsRefuseBadInput(t *testing.T, h *hookjet) {
	t.Helper()
	if code := h.api("POST", "/api/v1/portal/sessions", "", map[string]any{"tenant": "acme"}, nil); code != http.StatusUnauthorized {
		t.Errorf("portal session without the token: %d, want 401", code)
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"ttl": "1h"}, "tenant"},
		{map[string]any{"tenant": "Acme"}, "tenant"}, // not a tenant (config.CheckTenant): no endpoint or event could carry it
		{map[string]any{"tenant": "acme/globex"}, "tenant"},
		{map[string]any{"tenant": "acme", "ttl": "169h"}, "ttl"},
		{map[string]any{"tenant": "acme", "ttl": "soon"}, "ttl"},
		{map[string]any{"tenant": "acme", "scope": "all"}, "scope"},
	} {
		var e struct{ Error, Field string }
		if code := h.api("POST", "/api/v1/portal/sessions", consoleToken, tc.body, &e); code != http.StatusBadRequest || e.Field != tc.field {
			t.Errorf("portal session %v: %d %+v, want 400 naming %s", tc.body, code, e, tc.field)
		}
	}
	var res struct {
		URL       string `json:"url"`
		ExpiresAt string `json:"expires_at"`
	}
	h.api("POST", "/api/v1/portal/sessions", consoleToken, map[string]any{"tenant": "acme"}, &res)
	exp, err := time.Parse(time.RFC3339, res.ExpiresAt)
	if err != nil || time.Until(exp) > time.Hour || time.Until(exp) < 59*time.Minute {
		t.Errorf("default ttl: expires_at %q (%v), want in 1h", res.ExpiresAt, err)
	}
}

func portalReadOnlyAndFramed(t *testing.T, h *hookjet, do func(string, string, url.Values, map[string]string) (*http.Response, string)) {
	t.Helper()
	base := "http://" + h.srv.AdminAddr()
	link := portalLink(t, h, map[string]any{"tenant": "acme", "ttl": "10m", "read_only": true})
	path := strings.TrimPrefix(link, base)
	resp, page := do("GET", path, nil, nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "billing") || strings.Contains(page, `name="url"`) {
		t.Fatalf("read-only portal: %d, create form shown: %v", resp.StatusCode, strings.Contains(page, `name="url"`))
	}
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "frame-ancestors https://app.example.com") || resp.Header.Get("X-Frame-Options") != "" {
		t.Fatalf("portal framing headers: CSP %q, X-Frame-Options %q", csp, resp.Header.Get("X-Frame-Options"))
	}
	_, epPage := do("GET", path+"endpoints/billing", nil, nil)
	csrf := csrfOf(t, epPage)
	same := map[string]string{"Origin": base, "Sec-Fetch-Site": "same-origin"}
	if resp, _ := do("POST", path+"endpoints/billing/test", url.Values{"csrf": {csrf}}, same); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a test event from a read-only session: %d, want 403", resp.StatusCode)
	}
	// A session of another tenant cannot act on this one's endpoint.
	other := strings.TrimPrefix(portalLink(t, h, map[string]any{"tenant": "globex"}), base)
	_, home := do("GET", other, nil, nil)
	if resp, _ := do("POST", other+"endpoints/billing/test", url.Values{"csrf": {csrfOf(t, home)}}, same); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("globex's session testing acme's endpoint: %d, want 404", resp.StatusCode)
	}
}

// TestConsoleOpenWithoutToken: without admin.token (loopback) the console
// needs no sign-in, but its forms still need the session's CSRF token.
func TestConsoleOpenWithoutToken(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "crm", URL: "http://127.0.0.1:9/"})
	h := startHookjet(t, cfg, cli.Options{})
	base := "http://" + h.srv.AdminAddr()
	resp, err := http.Get(base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || len(resp.Cookies()) != 1 || !strings.Contains(string(page), "crm") || strings.Contains(string(page), "Sign out") {
		t.Fatalf("open console: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	cookie := resp
	if code := httpStatus(t, "GET", base+"/console/login"); code != http.StatusOK {
		t.Fatalf("login page of an open console: %d (after the redirect to the overview)", code)
	}
	req, _ := http.NewRequest("GET", base+"/console/endpoints/crm", nil)
	req.AddCookie(cookie.Cookies()[0])
	epResp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	epPage, _ := io.ReadAll(epResp.Body)
	_ = epResp.Body.Close()
	for csrf, want := range map[string]int{"forged": http.StatusForbidden, csrfOf(t, string(epPage)): http.StatusSeeOther} {
		req, _ := http.NewRequest("POST", base+"/console/endpoints/crm/disable", strings.NewReader(url.Values{"csrf": {csrf}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.AddCookie(cookie.Cookies()[0])
		res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if res.StatusCode != want {
			t.Errorf("disable with CSRF token %.8q: %d, want %d", csrf, res.StatusCode, want)
		}
	}
}

// newFramer serves /frame?src=URL: a page of another origin that frames
// URL, as a customer's app embeds the portal.
func newFramer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>customer app</title><iframe src="%s" width="900" height="600"></iframe>`, html.EscapeString(r.URL.Query().Get("src")))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// framed opens the framer with src in its frame and returns the URL the
// frame shows once it has loaded ("chrome-error://..." when the browser
// refused to show it there).
func framed(t *testing.T, ctx context.Context, framer *httptest.Server, src string) string {
	t.Helper()
	run(t, ctx, "open a page that frames "+src, chromedp.Navigate(framer.URL+"/frame?src="+url.QueryEscape(src)))
	var got string
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		tree, err := chromedp.Call(ctx, page.GetFrameTree, cdp.Empty{})
		if err != nil {
			return err
		}
		if tree.FrameTree == nil || len(tree.FrameTree.ChildFrames) != 1 || tree.FrameTree.ChildFrames[0].Frame == nil {
			return fmt.Errorf("no frame yet")
		}
		got = tree.FrameTree.ChildFrames[0].Frame.URL
		if got == "" || got == "about:blank" {
			return fmt.Errorf("the frame has not loaded")
		}
		return nil
	})
	return got
}

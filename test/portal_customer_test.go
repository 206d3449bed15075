package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/testkit"
)

// customerReceiver verifies every request with the secret the portal
// showed and keeps what arrived: the event type, the body and the
// X-Api-Key header the customer set.
type customerReceiver struct {
	*httptest.Server
	mu     sync.Mutex
	secret string
	got    []customerDelivery
}

type customerDelivery struct{ ID, Type, Body, APIKey string }

func newCustomerReceiver(t *testing.T) *customerReceiver {
	r := &customerReceiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		defer r.mu.Unlock()
		id, ts := req.Header.Get("webhook-id"), req.Header.Get("webhook-timestamp")
		if !strings.Contains(" "+req.Header.Get("webhook-signature")+" ", " "+testkit.RefSign(testkit.RefKey(t, r.secret), id, ts, body)+" ") {
			t.Errorf("receiver: request %s not signed with the secret the portal showed", id)
		}
		r.got = append(r.got, customerDelivery{ID: id, Type: req.Header.Get("Hookjet-Event-Type"), Body: string(body), APIKey: req.Header.Get("X-Api-Key")})
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *customerReceiver) setSecret(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secret = s
}

// delivery returns what arrived with webhook-id id.
func (r *customerReceiver) delivery(id string) (customerDelivery, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, d := range r.got {
		if d.ID == id {
			return d, true
		}
	}
	return customerDelivery{}, false
}

// TestPortalIsTheCustomersWholeView drives the portal in Chromium as a
// customer would: create an endpoint with headers and a filter, try the
// filter, send a test event of a chosen type with its payload, edit,
// disable, enable, rotate and delete it, read the hourly chart; it is
// refused a transform (portal.allow_transforms is off) and a destination
// type portal.destinations does not list, never sees or changes another
// tenant's endpoint or event, and a read-only link shows and does nothing.
// HOOKJET_SCREENSHOTS=1 saves the pages to docs/screenshots/portal-*.png.
func TestPortalIsTheCustomersWholeView(t *testing.T) {
	ctx := browser(t)
	cfg := testConfig(t, t.TempDir(), "portal:\n  allow_private_networks: true\n  destinations: [webhook, nats]\n")
	cfg.Admin.Token = config.NewSecret(consoleToken)
	h := startHookjet(t, cfg, cli.Options{})
	base := "http://" + h.srv.AdminAddr()
	other := newCustomerReceiver(t)
	var created struct{ Secret string }
	if code := h.api("POST", "/api/v1/endpoints", consoleToken, map[string]any{"id": "globex-crm", "url": other.URL, "tenant": "globex", "events": []string{">"}, "description": "globex's own"}, &created); code != http.StatusCreated {
		t.Fatalf("create globex-crm: HTTP %d", code)
	}
	other.setSecret(created.Secret)
	audit := newCustomerReceiver(t)
	if code := h.api("POST", "/api/v1/endpoints", consoleToken, map[string]any{"id": "operator-audit", "url": audit.URL, "events": []string{"order.>"}}, &created); code != http.StatusCreated {
		t.Fatalf("create operator-audit: HTTP %d", code)
	}
	audit.setSecret(created.Secret)
	link := portalLink(t, h, map[string]any{"tenant": "acme", "ttl": "1h"})
	r := newCustomerReceiver(t)

	// Create, with a header and a filter; the secret is shown once.
	run(t, ctx, "create an endpoint",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/endpoints"] input[name=url]`)),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=url]`), r.URL+"/hooks"),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=description]`), xss),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=events]`), "order.created order.paid"),
		setField(`form[action$="/endpoints"] textarea[name=headers]`, "X-Api-Key: k-123-secret-value"),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=filter]`), "data.amount > 100"),
		chromedp.Click(chromedp.CSS(`form[action$="/endpoints"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	secret := text(t, ctx, `#secret`)
	if !strings.HasPrefix(secret, "whsec_") {
		t.Fatalf("the secret page shows %q", secret)
	}
	r.setSecret(secret)
	var list struct {
		Endpoints []struct{ ID string } `json:"endpoints"`
	}
	h.api("GET", "/api/v1/endpoints?tenant=acme", consoleToken, nil, &list)
	if len(list.Endpoints) != 1 {
		t.Fatalf("acme's endpoints after the create: %+v", list.Endpoints)
	}
	id := list.Endpoints[0].ID
	var made struct {
		Tenant, Filter string
		Events         []string
		HeaderNames    []string `json:"header_names"`
	}
	h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, &made)
	if made.Tenant != "acme" || made.Filter != "data.amount > 100" || strings.Join(made.HeaderNames, ",") != "X-Api-Key" || len(made.Events) != 2 {
		t.Fatalf("the endpoint created: %+v", made)
	}
	page := link + "endpoints/" + id

	run(t, ctx, "open the endpoint", chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`p.description`)))
	body := text(t, ctx, `body`)
	injected := value(t, ctx, "count injected elements", chromedp.Evaluate[int](`document.querySelectorAll('p.description *').length + document.querySelectorAll('img[src=x]').length`))
	if text(t, ctx, `p.description`) != xss || injected != 0 {
		t.Fatalf("the description is not shown as the text typed (%d injected elements)", injected)
	}
	if !strings.Contains(body, "X-Api-Key") || strings.Contains(body, "k-123-secret-value") {
		t.Fatal("the endpoint page must name the header and never show its value")
	}
	for _, operator := range []string{"max_in_flight", "admin.token", "portal.", "security."} {
		if strings.Contains(body, operator) {
			t.Errorf("the endpoint page speaks the operator's words %q", operator)
		}
	}
	portalFilterTest(t, ctx, h, page)
	portalTestEvent(t, ctx, r, page)
	portalEditDisableEnable(t, ctx, h, page, id)
	portalRefusals(t, h, base, link, id)
	portalReadOnly(t, ctx, h, base, id)
	portalEventPages(t, ctx, link, id)
	portalCatalogue(t, ctx, h, link)
	portalNATSDestination(t, ctx, h, link)

	// Rotate (the confirm() of app.js answered yes), then delete after
	// the confirmation page.
	run(t, ctx, "rotate the secret",
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/rotate"] button`)),
		chromedp.Evaluate[chromedp.Void](`(window.confirm = function () { return true; }, {})`),
		chromedp.Click(chromedp.CSS(`form[action$="/rotate"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	if s := text(t, ctx, `#secret`); !strings.HasPrefix(s, "whsec_") || s == secret {
		t.Fatalf("rotation shows %q", s)
	}
	run(t, ctx, "delete: the confirmation",
		chromedp.Navigate(page),
		chromedp.Click(chromedp.CSS(`form[action$="/delete"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.what`)))
	if what := text(t, ctx, `p.what`); !strings.Contains(what, r.URL) || h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, nil) != http.StatusOK {
		t.Fatalf("the confirmation page says %q, or the endpoint is gone before it was confirmed", what)
	}
	screenshot(t, ctx, "portal-delete")
	run(t, ctx, "delete: confirmed",
		chromedp.Click(chromedp.CSS(`form[action$="/delete"] button.danger`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	if msg := text(t, ctx, `p.flash`); !strings.Contains(msg, "deleted") {
		t.Fatalf("after the delete: %q", msg)
	}
	if code := h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, nil); code != http.StatusNotFound {
		t.Fatalf("the deleted endpoint answers %d", code)
	}
	if code := h.api("GET", "/api/v1/endpoints/globex-crm", consoleToken, nil, nil); code != http.StatusOK {
		t.Fatalf("globex-crm after acme's session: %d", code)
	}
}

// portalFilterTest tries the filter on an inline event (no match, then a
// match with another filter typed in) and on one of the tenant's stored
// events by id; another tenant's event id is not found.
func portalFilterTest(t *testing.T, ctx context.Context, h *hookjet, page string) {
	t.Helper()
	try := func(what, eventID, typ, data, filter string) string {
		run(t, ctx, what,
			chromedp.Navigate(page),
			chromedp.WaitVisible(chromedp.CSS(`form.filter-test`)),
			setField(`form.filter-test input[name=event_id]`, eventID),
			setField(`form.filter-test input[name=test_type]`, typ),
			setField(`form.filter-test textarea[name=test_data]`, data),
			setField(`form.filter-test input[name=filter]`, filter),
			chromedp.Click(chromedp.CSS(`form.filter-test button`)),
			chromedp.WaitVisible(chromedp.CSS(`div.result, p.error`)))
		return text(t, ctx, `div.result, p.error`)
	}
	if got := try("an event the filter refuses", "", "order.created", `{"amount": 50}`, "data.amount > 100"); !strings.HasPrefix(got, "No match") {
		t.Fatalf("amount 50 against data.amount > 100: %q", got)
	}
	if got := try("another filter typed in", "", "order.created", `{"amount": 50}`, "data.amount > 10"); !strings.HasPrefix(got, "Match") {
		t.Fatalf("amount 50 against data.amount > 10: %q", got)
	}
	screenshot(t, ctx, "portal-filter-test")
	h.publishFor("acme", "order.created", "acme-order-1", []byte(`{"tenant":"acme","amount":500}`))
	h.publishFor("globex", "order.created", "globex-order-1", []byte(`{"tenant":"globex","amount":500}`))
	checkFor(t, 15*time.Second, 200*time.Millisecond, func() error {
		if got := try("a stored event of the tenant", "acme-order-1", "", "", "data.amount > 100"); !strings.HasPrefix(got, "Match") {
			return fmt.Errorf("acme-order-1: %q", got)
		}
		return nil
	})
	if got := try("another tenant's event", "globex-order-1", "", "", "data.amount > 100"); !strings.Contains(got, "no event globex-order-1 of yours") {
		t.Fatalf("globex-order-1 in acme's filter test: %q", got)
	}
}

// portalTestEvent sends a test event of a chosen type with its payload:
// it arrives signed, with that type, that body and the customer's header.
func portalTestEvent(t *testing.T, ctx context.Context, r *customerReceiver, page string) {
	t.Helper()
	run(t, ctx, "send a test event of a chosen type",
		chromedp.Navigate(page),
		chromedp.WaitVisible(chromedp.CSS(`form.test select[name=test_type]`)),
		setField(`form.test select[name=test_type]`, "order.paid"),
		setField(`form.test textarea[name=test_data]`, `{"amount": 1200, "currency": "EUR"}`),
		chromedp.Click(chromedp.CSS(`form.test button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash span.id`)))
	event := text(t, ctx, `p.flash span.id`)
	var got customerDelivery
	checkFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		var ok bool
		if got, ok = r.delivery(event); !ok {
			return fmt.Errorf("test event %s not received", event)
		}
		return nil
	})
	var data map[string]any
	if err := json.Unmarshal([]byte(got.Body), &data); err != nil || got.Type != "order.paid" || data["amount"] != 1200.0 || got.APIKey != "k-123-secret-value" {
		t.Fatalf("the test event arrived as %+v", got)
	}
	// The chart: 24 hourly slots; the two deliveries (acme-order-1 and
	// the test event) in one bar, or two when an hour began between them.
	checkFor(t, 15*time.Second, 200*time.Millisecond, func() error {
		if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitVisible(chromedp.CSS(`svg.volume`))); err != nil {
			return err
		}
		hours := value(t, ctx, "count the chart's hours", chromedp.Evaluate[int](`document.querySelectorAll('svg.volume g.hour').length`))
		bars := value(t, ctx, "count the chart's bars", chromedp.Evaluate[int](`document.querySelectorAll('svg.volume rect.ok').length`))
		legend := text(t, ctx, `p.legend`)
		if hours != 24 || bars < 1 || bars > 2 || !strings.Contains(legend, "delivered (2)") || !strings.Contains(legend, "failed attempts (0)") {
			return fmt.Errorf("the chart has %d hours, %d delivered bars, legend %q", hours, bars, legend)
		}
		return nil
	})
	screenshot(t, ctx, "portal-endpoint")
}

// portalEditDisableEnable edits the description and the event types in
// the edit form, then disables and enables the endpoint.
func portalEditDisableEnable(t *testing.T, ctx context.Context, h *hookjet, page, id string) {
	t.Helper()
	run(t, ctx, "edit the endpoint",
		chromedp.Navigate(page),
		chromedp.Click(chromedp.CSS(`details.edit summary`)),
		chromedp.WaitVisible(chromedp.CSS(`form.edit input[name=description]`)),
		setField(`form.edit input[name=description]`, "orders for the CRM"),
		setField(`form.edit input[name=events]`, "order.*"),
		setField(`form.edit input[name=filter]`, "data.amount > 10"))
	screenshot(t, ctx, "portal-edit")
	run(t, ctx, "save the edit",
		chromedp.Click(chromedp.CSS(`form.edit button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash`)))
	var ep struct {
		Description, Filter string
		Events              []string
		Disabled            bool
		HeaderNames         []string `json:"header_names"`
	}
	h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, &ep)
	if ep.Description != "orders for the CRM" || strings.Join(ep.Events, " ") != "order.*" || ep.Filter != "data.amount > 10" || len(ep.HeaderNames) != 1 {
		t.Fatalf("after the edit: %+v (the headers left empty must stay)", ep)
	}
	run(t, ctx, "disable",
		chromedp.Click(chromedp.CSS(`form[action$="/disable"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/enable"] button`)))
	if note := text(t, ctx, `p.status-note`); !strings.Contains(note, "This endpoint is paused") {
		t.Fatalf("a disabled endpoint says %q", note)
	}
	if h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, &ep); !ep.Disabled {
		t.Fatal("Disable did not disable the endpoint")
	}
	run(t, ctx, "enable",
		chromedp.Click(chromedp.CSS(`form[action$="/enable"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/disable"] button`)))
	if h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, &ep); ep.Disabled {
		t.Fatal("Enable did not enable the endpoint")
	}
}

// portalRefusals: a transform and a destination type portal.destinations
// does not list are refused with the field named, and nothing of another
// tenant's endpoint can be read or changed: 404, as for no endpoint.
func portalRefusals(t *testing.T, h *hookjet, base, link, id string) {
	t.Helper()
	p := &browserless{t: t, base: base, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(p.client.CloseIdleConnections)
	own := strings.TrimPrefix(link, base) + "endpoints/" + id
	for _, tt := range []struct {
		what, action string
		form         url.Values
		status       int
		says         string
	}{
		{"a transform", "/edit", url.Values{"transform": {"function handler(w) { return w }"}}, http.StatusForbidden, "transform: transformations are not offered here"},
		{"a transform test", "/transform-test", url.Values{"test_type": {"order.created"}}, http.StatusForbidden, "not offered here"},
		{"a kafka destination", "/edit", url.Values{"dest_type": {"kafka"}, "dest_brokers": {"127.0.0.1:9092"}, "dest_topic": {"orders"}}, http.StatusForbidden, "destination: delivering to &#34;kafka&#34; is not offered here"},
		{"a header without a value", "/edit", url.Values{"headers": {"X-Api-Key"}}, http.StatusBadRequest, "headers: line 1"},
	} {
		code, body, _ := p.post(own, own+tt.action, tt.form)
		if code != tt.status || !strings.Contains(body, tt.says) {
			t.Errorf("%s: HTTP %d, want %d saying %q", tt.what, code, tt.status, tt.says)
		}
	}
	var ep struct{ Transform string }
	if h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, &ep); ep.Transform != "" {
		t.Fatalf("a refused transform was saved: %q", ep.Transform)
	}
	theirs := strings.TrimPrefix(link, base) + "endpoints/globex-crm"
	if code, body := p.get(theirs); code != http.StatusNotFound || strings.Contains(body, "globex's own") {
		t.Errorf("another tenant's endpoint: HTTP %d, want 404 showing nothing of it", code)
	}
	for _, action := range []string{"/edit", "/disable", "/delete", "/rotate", "/filter-test", "/test"} {
		form := url.Values{"description": {"taken over"}, "step": {"confirm"}, "test_type": {"order.created"}}
		if code, _, _ := p.post(own, theirs+action, form); code != http.StatusNotFound {
			t.Errorf("POST %s to another tenant's endpoint: HTTP %d, want 404", action, code)
		}
	}
	var g struct {
		Description string
		Disabled    bool
		Secrets     int
	}
	if code := h.api("GET", "/api/v1/endpoints/globex-crm", consoleToken, nil, &g); code != http.StatusOK || g.Description != "globex's own" || g.Disabled || g.Secrets != 1 {
		t.Fatalf("globex-crm after acme's attempts: HTTP %d %+v", code, g)
	}
}

// portalReadOnly: a read-only link shows the endpoint with no form that
// changes anything, and a POST is refused.
func portalReadOnly(t *testing.T, ctx context.Context, h *hookjet, base, id string) {
	t.Helper()
	ro := portalLink(t, h, map[string]any{"tenant": "acme", "read_only": true})
	run(t, ctx, "open a read-only link", chromedp.Navigate(ro+"endpoints/"+id), chromedp.WaitVisible(chromedp.CSS(`svg.volume, p.muted`)))
	if n := value(t, ctx, "count forms that post", chromedp.Evaluate[int](`document.querySelectorAll('form[method=post] button, form[method=post] input[type=submit]').length`)); n != 0 {
		t.Fatalf("a read-only page has %d buttons that post", n)
	}
	p := &browserless{t: t, base: base, client: &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	t.Cleanup(p.client.CloseIdleConnections)
	req, _ := http.NewRequest("POST", ro+"endpoints/"+id+"/disable", strings.NewReader("csrf=x"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	code, body := p.do(req)
	var ep struct{ Disabled bool }
	h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, &ep)
	if code != http.StatusForbidden || !strings.Contains(body, "read-only") || ep.Disabled {
		t.Fatalf("a read-only session's disable: HTTP %d, endpoint disabled %v", code, ep.Disabled)
	}
}

// portalNATSDestination creates an endpoint that delivers to a NATS
// subject, a type portal.destinations lists: the form offers it, the
// endpoint is the tenant's, and the page shows where it delivers.
func portalNATSDestination(t *testing.T, ctx context.Context, h *hookjet, link string) {
	t.Helper()
	run(t, ctx, "create a NATS destination",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/endpoints"] select[name=dest_type]`)),
		setField(`form[action$="/endpoints"] select[name=dest_type]`, "nats"),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=dest_url_nats]`), "nats://"+h.cfg.NATS.Listen),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=dest_subject]`), "acme.orders.{type}"),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=description]`), "to our NATS"),
		chromedp.Click(chromedp.CSS(`form[action$="/endpoints"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret, p.error`)))
	if msg, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`p.error`), chromedp.AtLeast(0))); msg != "" {
		t.Fatalf("a NATS destination, which portal.destinations lists, was refused: %s", msg)
	}
	var list struct {
		Endpoints []struct {
			Tenant, Description string
			Settings            struct {
				Destination struct{ Type, Subject string }
			}
		} `json:"endpoints"`
	}
	h.api("GET", "/api/v1/endpoints?tenant=acme", consoleToken, nil, &list)
	found := false
	for _, e := range list.Endpoints {
		if e.Description == "to our NATS" {
			found = e.Settings.Destination.Type == "nats" && e.Settings.Destination.Subject == "acme.orders.{type}"
		}
	}
	if !found {
		t.Fatalf("no NATS destination among acme's endpoints: %+v", list.Endpoints)
	}
	run(t, ctx, "the portal's home", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS(`table.endpoints`)))
	if list := text(t, ctx, `table.endpoints`); !strings.Contains(list, "nats nats://") || !strings.Contains(list, "subject acme.orders.{type}") {
		t.Fatalf("the home does not say where the NATS endpoint delivers:\n%s", list)
	}
	screenshot(t, ctx, "portal-home")
}

// portalEventPages: the events page lists the tenant's events only; an
// event's page shows its payload and its delivery to the tenant's
// endpoint, never the operator's endpoint that also received it; another
// tenant's event is 404.
func portalEventPages(t *testing.T, ctx context.Context, link, id string) {
	t.Helper()
	checkFor(t, 15*time.Second, 200*time.Millisecond, func() error {
		if err := chromedp.Do(ctx, chromedp.Navigate(link+"events/acme-order-1"), chromedp.WaitVisible(chromedp.CSS(`pre.payload, p.error`))); err != nil {
			return err
		}
		page, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`main`)))
		if err != nil {
			return err
		}
		if !strings.Contains(page, `"amount": 500`) || !strings.Contains(page, id) || !strings.Contains(page, "delivered") {
			return fmt.Errorf("the event page does not show the payload and its delivery to %s yet:\n%s", id, page)
		}
		if strings.Contains(page, "operator-audit") {
			t.Fatalf("the portal's event page shows the operator's endpoint:\n%s", page)
		}
		return nil
	})
	screenshot(t, ctx, "portal-event")
	run(t, ctx, "the events list", chromedp.Navigate(link+"events"), chromedp.WaitVisible(chromedp.CSS(`table.events`)))
	if list := text(t, ctx, `table.events`); !strings.Contains(list, "acme-order-1") || strings.Contains(list, "globex") {
		t.Fatalf("acme's events list:\n%s", list)
	}
	screenshot(t, ctx, "portal-events")
	if code := httpStatus(t, "GET", link+"events/globex-order-1"); code != http.StatusNotFound {
		t.Fatalf("another tenant's event: HTTP %d, want 404", code)
	}
}

// portalCatalogue: the catalogue page shows a type's description, schema
// and example; an endpoint is made by ticking the type; its test event
// without a payload carries the type's example.
func portalCatalogue(t *testing.T, ctx context.Context, h *hookjet, link string) {
	t.Helper()
	typ := map[string]any{"name": "invoice.issued", "description": "An invoice was issued to a customer",
		"schema":   map[string]any{"type": "object", "properties": map[string]any{"total": map[string]any{"type": "number"}}, "required": []string{"total"}},
		"examples": []any{map[string]any{"total": 99.5, "currency": "EUR"}}}
	if code := h.api("POST", "/api/v1/event-types", consoleToken, typ, nil); code != http.StatusCreated {
		t.Fatalf("create the event type: HTTP %d", code)
	}
	run(t, ctx, "the catalogue", chromedp.Navigate(link+"event-types"), chromedp.WaitVisible(chromedp.CSS(`section.event-type`)))
	if page := text(t, ctx, `main`); !strings.Contains(page, "invoice.issued") || !strings.Contains(page, "An invoice was issued") || !strings.Contains(page, `"total"`) || !strings.Contains(page, "99.5") {
		t.Fatalf("the catalogue page shows:\n%s", page)
	}
	screenshot(t, ctx, "portal-types")
	r := newCustomerReceiver(t)
	run(t, ctx, "create an endpoint by ticking a type",
		chromedp.Navigate(link),
		chromedp.WaitVisible(chromedp.CSS(`form[action$="/endpoints"] input[name=types][value="invoice.issued"]`)),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=url]`), r.URL+"/invoices"),
		chromedp.SendKeys(chromedp.CSS(`form[action$="/endpoints"] input[name=description]`), "invoices"),
		chromedp.Click(chromedp.CSS(`form[action$="/endpoints"] input[name=types][value="invoice.issued"]`)),
		chromedp.Click(chromedp.CSS(`form[action$="/endpoints"] button[type=submit]`)),
		chromedp.WaitVisible(chromedp.CSS(`#secret`)))
	r.setSecret(text(t, ctx, `#secret`))
	back := value(t, ctx, "the endpoint's link", chromedp.AttributeValue(chromedp.CSS(`section.card p a`), "href"))
	id := back.Value[strings.LastIndex(back.Value, "/")+1:]
	var ep struct{ Events []string }
	if h.api("GET", "/api/v1/endpoints/"+id, consoleToken, nil, &ep); strings.Join(ep.Events, " ") != "invoice.issued" {
		t.Fatalf("the ticked type made events %v", ep.Events)
	}
	run(t, ctx, "test with the type's example",
		chromedp.Navigate(link+"endpoints/"+id),
		chromedp.WaitVisible(chromedp.CSS(`form.test select[name=test_type]`)),
		setField(`form.test select[name=test_type]`, "invoice.issued"),
		chromedp.Click(chromedp.CSS(`form.test button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.flash span.id`)))
	event := text(t, ctx, `p.flash span.id`)
	checkFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		d, ok := r.delivery(event)
		if !ok {
			return fmt.Errorf("test event %s not received", event)
		}
		if d.Type != "invoice.issued" || !strings.Contains(d.Body, `"total":99.5`) {
			return fmt.Errorf("the test event arrived as %+v, want the example", d)
		}
		return nil
	})
}

// setField sets the value of the form field sel finds, empty included.
func setField(sel, v string) chromedp.Action[chromedp.Void] {
	q, _ := json.Marshal(sel)
	val, _ := json.Marshal(v)
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(document.querySelector(%s).value = %s, {})`, q, val))
}

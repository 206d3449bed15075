package console

import (
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
)

// heldEndpoint is an ordered endpoint with 12 held keys, 11 of them listed.
func heldEndpoint() endpoint {
	since := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	next := since.Add(90 * time.Second)
	h := &api.HeldKeys{Count: 12, Oldest: &since, Why: map[string]int{api.HeldRetrying: 1, api.HeldDeadLetter: 11}}
	h.Keys = append(h.Keys, api.HeldKey{Key: "customer-<7>", Since: since, Why: api.HeldRetrying, EventID: "evt_r", Attempts: 3, NextAttempt: &next})
	for i := range 10 {
		h.Keys = append(h.Keys, api.HeldKey{Key: "dk" + string(rune('a'+i)), Since: since.Add(time.Minute), Why: api.HeldDeadLetter, EventID: "evt_d"})
	}
	return endpoint{ID: "crm", URL: "https://crm.example.com/h", Source: "api", Breaker: breakerStatus{State: "closed"},
		Settings: &settings{Ordering: "key", OrderingOnDeadLetter: "hold"}, HeldKeys: h}
}

// renderPage renders template name with data as the console or the portal.
func renderPage(t *testing.T, name, area string, data any) string {
	t.Helper()
	tm, err := loadTemplates()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	p := &page{Title: "x", Area: area, Static: "/" + area + "/static", Base: "/" + area, Data: data}
	if err := tm[name].ExecuteTemplate(&b, "layout", p); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// The console's endpoint page says the ordering, how many keys are held,
// since when and why, and lists ten of them; its edit form shows the
// current settings.
func TestEndpointPageShowsHeldKeys(t *testing.T) {
	out := renderPage(t, "endpoint", "console", endpointData{E: heldEndpoint()})
	for _, want := range []string{
		"<dt>Ordering</dt><dd>by key: one key's events one at a time, in publish order; after a dead letter the key holds until the dead letter is replayed or discarded</dd>",
		"<dt>Held keys</dt><dd>12 waiting on an earlier delivery of their key, the oldest since <time datetime=\"2026-12-01T08:00:00Z\"",
		"; why: 1 retrying, 11 dead_letter</dd>",
		"<td class=\"id\">customer-&lt;7&gt;</td><td>retrying</td>",
		"<td class=\"id\">evt_r</td><td>3</td><td><time datetime=\"2026-12-01T08:01:30Z\"",
		"<td class=\"id\">dki</td>",
		"2 more held keys not listed.",
		`<option value="key" selected>by key</option>`,
		`<option value="hold" selected>holds</option>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("endpoint page lacks %q", want)
		}
	}
	if strings.Contains(out, ">dkj<") {
		t.Error("the page lists more than 10 held keys")
	}

	plain := heldEndpoint()
	plain.Settings, plain.HeldKeys = &settings{Ordering: "none", OrderingOnDeadLetter: "skip"}, nil
	out = renderPage(t, "endpoint", "console", endpointData{E: plain})
	if !strings.Contains(out, "<dt>Ordering</dt><dd>none</dd>") || strings.Contains(out, "Held keys") || !strings.Contains(out, `<option value="none" selected>none</option>`) {
		t.Errorf("an unordered endpoint's page:\n%s", out)
	}
}

// The portal's endpoint view shows the customer the same: ordering, held
// keys and the list.
func TestPortalEndpointShowsHeldKeys(t *testing.T) {
	out := renderPage(t, "portal_endpoint", "portal", portalEndpointData{E: heldEndpoint()})
	for _, want := range []string{
		"<dt>Ordering</dt><dd>by key:",
		"<dt>Held keys</dt><dd>12 waiting on an earlier delivery of their key",
		"<td class=\"id\">customer-&lt;7&gt;</td><td>retrying</td>",
		"2 more held keys not listed.",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("portal endpoint page lacks %q", want)
		}
	}
	plain := heldEndpoint()
	plain.Settings, plain.HeldKeys = &settings{Ordering: "none"}, nil
	if out := renderPage(t, "portal_endpoint", "portal", portalEndpointData{E: plain}); strings.Contains(out, "Ordering") || strings.Contains(out, "Held keys") {
		t.Error("the portal shows ordering for an unordered endpoint")
	}
}

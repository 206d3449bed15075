package test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hookjet/hookjet/cli"
)

// TestConsoleListsSearchesAndShowsEventsInBrowser: the console's events page
// lists stored events newest first and searches them by tenant and type;
// an event's page shows its payload and, per endpoint it matches, what
// happened: delivered, or filtered out by the endpoint's filter; a header
// value configured on an endpoint is never shown.
func TestConsoleListsSearchesAndShowsEventsInBrowser(t *testing.T) {
	ctx := browser(t)
	rcv := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "all", URL: rcv.URL, Events: []string{"order.*"}},
		endpointYAML{ID: "big", URL: rcv.URL, Events: []string{"order.*"}, Extra: "    filter: 'data.amount > 1000'\n"},
		endpointYAML{ID: "acme-only", URL: rcv.URL, Events: []string{"order.*"}, Extra: "    tenant: acme\n    headers: {X-Api-Key: hdr-secret-value}\n"},
	)
	h := startHookjet(t, cfg, cli.Options{})
	h.publishFor("acme", "order.created", "evt_acme_1", []byte(`{"amount":10,"note":"<b>not bold</b>"}`))
	h.publishFor("globex", "order.created", "evt_globex_1", []byte(`{"amount":5000}`))
	h.publishFor("", "order.paid", "evt_plain", []byte(`plain text`))
	for _, id := range []string{"evt_acme_1", "evt_globex_1", "evt_plain"} {
		rcv.waitFor(t, id)
	}
	base := "http://" + h.srv.AdminAddr()

	run(t, ctx, "open the events page", chromedp.Navigate(base+"/console/events"), chromedp.WaitVisible(chromedp.CSS(`table.events td.id`)))
	screenshot(t, ctx, "events")
	rows := text(t, ctx, `table.events tbody`)
	plain, globex, acme := strings.Index(rows, "evt_plain"), strings.Index(rows, "evt_globex_1"), strings.Index(rows, "evt_acme_1")
	if plain < 0 || globex < 0 || acme < 0 || plain > globex || globex > acme {
		t.Fatalf("the events page, want evt_plain, evt_globex_1, evt_acme_1 newest first:\n%s", rows)
	}
	run(t, ctx, "search by tenant and type",
		chromedp.SendKeys(chromedp.CSS(`#event-search input[name=tenant]`), "acme"),
		chromedp.SendKeys(chromedp.CSS(`#event-search input[name=type]`), "order.created"),
		chromedp.Submit(chromedp.CSS(`#event-search input[name=type]`)),
		chromedp.WaitVisible(chromedp.CSS(`input[name=tenant][value=acme]`)))
	if rows := text(t, ctx, `table.events tbody`); !strings.Contains(rows, "evt_acme_1") || strings.Contains(rows, "evt_globex_1") || strings.Contains(rows, "evt_plain") {
		t.Fatalf("tenant acme, type order.created: want evt_acme_1 alone:\n%s", rows)
	}
	run(t, ctx, "open an event from the list",
		chromedp.Click(chromedp.CSS(`table.events td.id a`)),
		chromedp.WaitVisible(chromedp.CSS(`#payload`)))
	screenshot(t, ctx, "event-outcomes")
	if p := text(t, ctx, `#payload`); !strings.Contains(p, `"amount": 10`) || !strings.Contains(p, `<b>not bold</b>`) {
		t.Fatalf("evt_acme_1's payload, want it indented and as text: %q", p)
	}
	for sel, what := range map[string]string{
		`section.delivery[data-endpoint="all"][data-state="delivered"]`:       "all delivered",
		`section.delivery[data-endpoint="acme-only"][data-state="delivered"]`: "acme-only delivered",
		`section.delivery[data-endpoint="big"][data-state="filtered_out"]`:    "big filtered out",
	} {
		if s := text(t, ctx, sel); s == "" {
			t.Errorf("%s: nothing at %s", what, sel)
		}
	}
	if main := text(t, ctx, `main`); strings.Contains(main, "hdr-secret-value") {
		t.Fatal("the event page shows a configured header value")
	}
	if reason := text(t, ctx, `section.delivery[data-endpoint="big"] p.reason`); !strings.Contains(reason, "filter is false") {
		t.Errorf("big's reason: %q", reason)
	}
}

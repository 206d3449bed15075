package test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
)

// The console's endpoint page tests the endpoint's filter and transform,
// or candidates typed there, on a stored event (by id) or one written as
// JSON: match or not; the request a delivery would send, without the
// endpoint's secret or configured header values; a throwing script's error
// with its line:column. Nothing is sent to the receiver.
func TestConsoleTestsFilterAndTransformInBrowser(t *testing.T) {
	ctx := browser(t)
	const headerValue = "header-value-never-shown-77"
	rcv := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "orders", URL: rcv.URL, Events: []string{"order.*"}, Extra: `    filter: 'data.amount > 1000.0'
    headers: {X-Api-Key: ` + headerValue + `}
    transform: |
      function handler(webhook) {
        webhook.headers["X-Amount"] = String(webhook.payload.amount);
        webhook.payload = {total: webhook.payload.amount};
        return webhook;
      }
`})
	cfg.Admin.Token = config.NewSecret(consoleToken)
	h := startHookjet(t, cfg, cli.Options{})
	base := "http://" + h.srv.AdminAddr()
	h.publish("order.created", "evt-stored", []byte(`{"amount": 5000}`))

	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/console/login"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), consoleToken),
		chromedp.Submit(chromedp.CSS(`input[name=token]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.figures`)))

	const filterForm, transformForm = `form[action$="/filter-test#code-test"]`, `form[action$="/transform-test#code-test"]`
	const small = `{"type": "order.created", "data": {"amount": 20}}`
	for _, tc := range []struct {
		what, eventID, event, candidate, want string
	}{
		{"the endpoint's filter on a stored event", "evt-stored", "", "", "Match: the endpoint receives this event."},
		{"the endpoint's filter on a written event", "", small, "", "No match: the event is filtered out for this endpoint."},
		{"a candidate filter", "", small, "data.amount < 100.0", "Match: the endpoint receives this event."},
	} {
		steps := []chromedp.Action[chromedp.Void]{
			chromedp.Navigate(base + "/console/endpoints/orders"),
			chromedp.WaitVisible(chromedp.CSS(filterForm + ` button`)),
		}
		for field, v := range map[string]string{`input[name=event_id]`: tc.eventID, `textarea[name=event]`: tc.event, `input[name=filter]`: tc.candidate} {
			if v != "" { // the fields start empty
				steps = append(steps, chromedp.SetValue(chromedp.CSS(filterForm+" "+field), v))
			}
		}
		steps = append(steps, chromedp.Submit(chromedp.CSS(filterForm+` button`)), chromedp.WaitVisible(chromedp.CSS(`p.filter-result`)))
		run(t, ctx, tc.what, steps...)
		if got := text(t, ctx, `p.filter-result`); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.what, got, tc.want)
		}
	}

	run(t, ctx, "the endpoint's transform on a stored event",
		chromedp.Navigate(base+"/console/endpoints/orders"),
		chromedp.WaitVisible(chromedp.CSS(transformForm+` button`)),
		chromedp.SetValue(chromedp.CSS(transformForm+` input[name=event_id]`), "evt-stored"),
		chromedp.Submit(chromedp.CSS(transformForm+` button`)),
		chromedp.WaitVisible(chromedp.CSS(`pre.transform-body`)))
	if got := text(t, ctx, `pre.transform-body`); got != `{"total":5000}` {
		t.Errorf("transformed body %q, want {\"total\":5000}", got)
	}
	shown := text(t, ctx, `dl.transform-request`)
	for _, want := range []string{rcv.URL, "X-Amount", "5000"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the request shown lacks %q:\n%s", want, shown)
		}
	}
	page := text(t, ctx, `body`)
	for _, secret := range []string{headerValue, secretA[6:], secretB[6:]} {
		if strings.Contains(page, secret) {
			t.Errorf("the page shows a secret or configured header value %q", secret)
		}
	}

	run(t, ctx, "a candidate transform that throws",
		chromedp.Navigate(base+"/console/endpoints/orders"),
		chromedp.WaitVisible(chromedp.CSS(transformForm+` button`)),
		chromedp.SetValue(chromedp.CSS(transformForm+` textarea[name=event]`), small),
		chromedp.SetValue(chromedp.CSS(transformForm+` textarea[name=transform]`), "function handler(webhook) {\n  throw new Error(\"nope\");\n}"),
		chromedp.Submit(chromedp.CSS(transformForm+` button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.transform-error`)))
	if got := text(t, ctx, `p.transform-error`); !strings.HasPrefix(got, "transform: 2:") || !strings.Contains(got, "nope") {
		t.Errorf("a throwing script: %q, want its error at line 2", got)
	}

	run(t, ctx, "an event that is not JSON",
		chromedp.Navigate(base+"/console/endpoints/orders"),
		chromedp.WaitVisible(chromedp.CSS(filterForm+` button`)),
		chromedp.SetValue(chromedp.CSS(filterForm+` textarea[name=event]`), "not json"),
		chromedp.Submit(chromedp.CSS(filterForm+` button`)),
		chromedp.WaitVisible(chromedp.CSS(`.code-test-result p.error`)))
	if got := text(t, ctx, `.code-test-result p.error`); !strings.HasPrefix(got, "event: want a JSON object") {
		t.Errorf("an inline event that is not JSON: %q, want an error naming event", got)
	}
	// evt-stored passes the filter and is delivered; the tests sent
	// nothing more.
	rcv.waitFor(t, "evt-stored")
	if n := rcv.count(); n != 1 {
		t.Errorf("the receiver got %d requests, want 1 (evt-stored's delivery): a test sends nothing", n)
	}
}

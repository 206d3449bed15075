package test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/client"
	"github.com/hookjet/hookjet/config"
	hjs "github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/publish"
	"github.com/hookjet/hookjet/server"
)

const catalogYAML = `catalog:
  validate: %s
  strict: %v
  event_types:
    - name: order.created
      description: An order was placed.
      schema:
        type: object
        required: [amount]
        properties:
          amount: {type: number}
          items: {type: array, items: {type: object, required: [sku], properties: {sku: {type: string}}}}
      examples: [{amount: 12.5}]
`

// catalogConfig is a config with the catalog section and one endpoint
// receiving everything.
func catalogConfig(t *testing.T, dir, mode string, strict bool, r *receiver) *config.Config {
	return testConfig(t, dir, fmt.Sprintf(catalogYAML, mode, strict), endpointYAML{ID: "sink", URL: r.URL})
}

// The catalogue through the API and the Go client: the file's types and
// hookjet's own listed and read-only, API types created, changed and
// deleted, bad definitions refused naming the field, and every type stored
// in HOOKJET_EVENT_TYPES where the other processes read them.
func TestEventTypesThroughTheAPI(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, catalogConfig(t, t.TempDir(), "warn", false, r), server.Options{})
	c := client.New("http://" + h.srv.AdminAddr()) // checked against api/openapi.json (TestMain)
	ctx := t.Context()

	l, err := c.EventTypes(ctx)
	if err != nil || l.Validate != "warn" || l.Strict {
		t.Fatalf("list: %+v %v", l, err)
	}
	sources := map[string]string{}
	for _, et := range l.EventTypes {
		sources[et.Name] = et.Source
	}
	for name, want := range map[string]string{"order.created": "config", "hookjet.dead_letter": "builtin", "hookjet.endpoint.disabled": "builtin",
		"hookjet.endpoint.enabled": "builtin", "hookjet.endpoint.breaker_opened": "builtin", "hookjet.endpoint.breaker_closed": "builtin"} {
		if sources[name] != want {
			t.Errorf("%s: source %q, want %q (list %v)", name, sources[name], want, sources)
		}
	}

	schema := json.RawMessage(`{"type":"object","required":["invoice"],"properties":{"invoice":{"type":"string"},"total":{"type":"integer"}}}`)
	created, err := c.CreateEventType(ctx, api.EventType{Name: "invoice.paid", Description: "paid", Schema: schema,
		Examples: []json.RawMessage{json.RawMessage(`{"invoice":"in_1","total":3}`)}})
	if err != nil || created.Source != "api" || created.UpdatedAt == nil || created.Description != "paid" {
		t.Fatalf("create: %+v %v", created, err)
	}
	if _, err := c.CreateEventType(ctx, api.EventType{Name: "invoice.paid"}); !errors.Is(err, api.ErrEventTypeExists) {
		t.Errorf("create again: %v, want ErrEventTypeExists", err)
	}
	for _, tt := range []struct {
		def          api.EventType
		field, error string
	}{
		{api.EventType{Name: "a.b", Schema: json.RawMessage(`{"type":"strng"}`)}, "schema", "schema: "},
		{api.EventType{Name: "a.b", Schema: json.RawMessage(`{"properties":{"n":{"minimum":"x"}}}`)}, "schema", "/properties/n/minimum: want number, got string"},
		{api.EventType{Name: "a.b", Schema: schema, Examples: []json.RawMessage{json.RawMessage(`{"invoice":"in_1"}`), json.RawMessage(`{"total":"3"}`)}},
			"examples[1]", "examples[1]: fails the schema: /invoice: is required; /total: want integer, got string"},
		{api.EventType{Name: "order.*"}, "name", "no wildcards"},
		{api.EventType{Name: "hookjet.mine"}, "name", "hookjet's own"},
	} {
		_, err := c.CreateEventType(ctx, tt.def)
		ce, ok := errors.AsType[*client.Error](err)
		if !ok || ce.Status != http.StatusBadRequest || ce.Field != tt.field || !strings.Contains(ce.Message, tt.error) {
			t.Errorf("create %s: %v, want 400 naming %s with %q", tt.def.Name, err, tt.field, tt.error)
		}
	}
	desc := "an invoice was paid"
	dep := true
	got, err := c.UpdateEventType(ctx, "invoice.paid", api.EventTypePatch{Description: &desc, Deprecated: &dep})
	if err != nil || got.Description != desc || !got.Deprecated || compact(t, got.Schema) != string(schema) {
		t.Errorf("update: %+v %v", got, err)
	}
	if _, err := c.UpdateEventType(ctx, "invoice.paid", api.EventTypePatch{Schema: json.RawMessage(`{"type":"string"}`)}); err == nil ||
		!strings.Contains(err.Error(), "examples[0]") {
		t.Errorf("update to a schema its example fails: %v, want 400 naming examples[0]", err)
	}
	for _, name := range []string{"order.created", "hookjet.dead_letter"} {
		if _, err := c.UpdateEventType(ctx, name, api.EventTypePatch{Description: &desc}); !errors.Is(err, api.ErrConflict) {
			t.Errorf("update %s: %v, want 409", name, err)
		}
		if err := c.DeleteEventType(ctx, name); !errors.Is(err, api.ErrConflict) {
			t.Errorf("delete %s: %v, want 409", name, err)
		}
	}
	// Stored where every process reads them: the file's as config.
	kv, err := h.js.KeyValue(ctx, hjs.EventTypeBucket)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"invoice.paid": `"source":"api"`, "order.created": `"source":"config"`} {
		e, err := kv.Get(ctx, name)
		if err != nil || !strings.Contains(string(e.Value()), want) {
			t.Errorf("%s in %s: %v %v, want %s", name, hjs.EventTypeBucket, e, err, want)
		}
	}
	// The CLI: a table, --json, and the API's refusal naming the field.
	var stdout, stderr strings.Builder
	noEnv := func(string) string { return "" }
	if err := cli.Run(ctx, []string{"event-types", "list", "--admin", h.srv.AdminAddr()}, noEnv, &stdout, &stderr); err != nil ||
		!regexp.MustCompile(`(?m)^invoice\.paid +api +yes +1 +\(deprecated\) an invoice was paid$`).MatchString(stdout.String()) ||
		!strings.HasPrefix(stdout.String(), "validate warn, strict false\n") {
		t.Errorf("event-types list: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if err := cli.Run(ctx, []string{"event-types", "show", "order.created", "--json", "--admin", h.srv.AdminAddr()}, noEnv, &stdout, &stderr); err != nil ||
		!strings.Contains(stdout.String(), `"source": "config"`) {
		t.Errorf("event-types show --json: %v\n%s", err, stdout.String())
	}
	err = cli.Run(ctx, []string{"event-types", "create", "x.y", "--schema", `{"type":"object","required":["n"]}`, "--example", "{}", "--admin", h.srv.AdminAddr()}, noEnv, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "examples[0]: fails the schema: /n: is required") {
		t.Errorf("event-types create with a failing example: %v", err)
	}
	stdout.Reset()
	if err := cli.Run(ctx, []string{"event-types", "delete", "invoice.paid", "--admin", h.srv.AdminAddr()}, noEnv, &stdout, &stderr); err != nil ||
		stdout.String() != "event type invoice.paid deleted\n" {
		t.Fatalf("event-types delete: %v %q", err, stdout.String())
	}
	if _, err := c.EventType(ctx, "invoice.paid"); !errors.Is(err, api.ErrUnknownEventType) {
		t.Errorf("after delete: %v, want ErrUnknownEventType", err)
	}
}

// With validate: enforce the HTTP and request publish paths answer 422
// naming each JSON pointer and why, and store nothing; a plain JetStream
// publish of an invalid event is dead-lettered as invalid; warn delivers
// and counts; strict refuses types not in the catalogue.
func TestPayloadValidationOnEveryPublishPath(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	h := startHookjet(t, catalogConfig(t, dir, "enforce", false, r), server.Options{})
	addr := h.srv.AdminAddr()

	code, body := postEvents(t, addr, "", map[string]any{"id": "evt_bad_http", "type": "order.created", "data": map[string]any{"amount": "12", "items": []any{map[string]any{"sku": 7}}}})
	wantProblems(t, "HTTP", code, body, http.StatusUnprocessableEntity, map[string]string{
		"data/amount":      "data/amount: want number, got string",
		"data/items/0/sku": "data/items/0/sku: want string, got number",
	})
	code, body = postEvents(t, addr, "", map[string]any{"events": []any{
		map[string]any{"type": "order.created", "data": map[string]any{"amount": 1}},
		map[string]any{"type": "order.created", "data": map[string]any{}},
	}})
	wantProblems(t, "HTTP batch", code, body, http.StatusUnprocessableEntity, map[string]string{"events[1].data/amount": "events[1].data/amount: is required"})

	_, err := hjs.PublishRequest(t.Context(), h.nc, publish.Event{ID: "evt_bad_req", Type: "order.created", Data: []byte(`"x"`)})
	if re, ok := errors.AsType[*publish.ReplyError](err); !ok || re.Status != http.StatusUnprocessableEntity || re.Field != "data" || re.Error() != "data: want object, got string" {
		t.Errorf("request: %v, want a 422 reply naming data", err)
	}
	// hookjet publish (the request) says every problem.
	env := []string{"HOOKJET_NATS_LISTEN=" + h.cfg.NATS.Listen, "HOOKJET_ADMIN_LISTEN=" + addr}
	var stdout, stderr bytes.Buffer
	err = cli.Main(t.Context(), []string{"publish", "order.created", "--id", "evt_bad_cli", "--data", `{"amount":"1","items":[{"sku":1}]}`}, env, &stdout, &stderr)
	if want := "publish: the event catalogue refuses it: data/amount: want number, got string; data/items/0/sku: want string, got number"; err == nil || err.Error() != want {
		t.Errorf("hookjet publish: %v, want %q", err, want)
	}
	for _, id := range []string{"evt_bad_http", "evt_bad_req", "evt_bad_cli"} {
		if _, ok := storedID(t, h, id); ok {
			t.Errorf("%s was stored", id)
		}
	}

	// A plain JetStream publish: dead-lettered as invalid, not delivered.
	h.publish("order.created", "evt_bad_js", []byte(`{"amount":"12"}`))
	h.publish("order.created", "evt_good_js", []byte(`{"amount":12}`))
	r.waitFor(t, "evt_good_js")
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		for _, e := range h.dlq("?endpoint=sink") {
			if e.EventID == "evt_bad_js" {
				if e.Reason != "invalid" || e.LastError != "/amount: want number, got string" {
					return fmt.Errorf("dead letter %+v, want reason invalid naming /amount", e)
				}
				return nil
			}
		}
		return errors.New("evt_bad_js is not dead-lettered")
	})
	if n := r.requestsFor("evt_bad_js"); n != 0 {
		t.Errorf("evt_bad_js delivered %d times", n)
	}
	counter := `hookjet_invalid_events_total{type="order.created"}`
	if v := h.metric(counter); v != 1 {
		t.Errorf("%s = %v, want 1", counter, v)
	}

	// warn: delivered and counted.
	reload(t, h, catalogConfig(t, dir, "warn", false, r))
	code, body = postEvents(t, addr, "", map[string]any{"id": "evt_warned", "type": "order.created", "data": map[string]any{"amount": "12"}})
	if code != http.StatusAccepted {
		t.Fatalf("warn: HTTP %d %v, want 202", code, body)
	}
	r.waitFor(t, "evt_warned")
	checkFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if v := h.metric(counter); v != 2 {
			return fmt.Errorf("%s = %v, want 2", counter, v)
		}
		return nil
	})

	// strict: a type not in the catalogue is refused naming type.
	reload(t, h, catalogConfig(t, dir, "off", true, r))
	code, body = postEvents(t, addr, "", map[string]any{"type": "lead.created", "data": map[string]any{}})
	wantProblems(t, "strict", code, body, http.StatusUnprocessableEntity, map[string]string{"type": `type: "lead.created" is not in the catalogue (catalog.strict); GET /api/v1/event-types lists the types`})
	if code, _ := postEvents(t, addr, "", map[string]any{"type": "order.created", "data": map[string]any{"amount": "x"}}); code != http.StatusAccepted {
		t.Errorf("strict with validate off, a known type with an invalid payload: HTTP %d, want 202", code)
	}
}

// wantProblems checks a 422 body lists exactly want (field -> error).
func wantProblems(t *testing.T, what string, code int, body map[string]any, status int, want map[string]string) {
	t.Helper()
	if code != status {
		t.Fatalf("%s: HTTP %d %v, want %d", what, code, body, status)
	}
	got := map[string]string{}
	list, _ := body["errors"].([]any)
	for _, p := range list {
		m, _ := p.(map[string]any)
		f, _ := m["field"].(string)
		e, _ := m["error"].(string)
		got[f] = e
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: problems %v, want %v", what, got, want)
	}
}

// storedID reports whether an event with id is in HOOKJET_EVENTS.
func storedID(t *testing.T, h *hookjet, id string) (uint64, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	s, err := h.js.Stream(ctx, hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err == nil && m.Header.Get("Nats-Msg-Id") == id {
			return seq, true
		}
	}
	return 0, false
}

func reload(t *testing.T, h *hookjet, cfg *config.Config) {
	t.Helper()
	if err := h.srv.Reload(t.Context(), cfg); err != nil {
		t.Fatalf("reload: %v", err)
	}
}

// compact is raw without white space.
func compact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return b.String()
}

// The console lists the catalogue: each type's source, description (as
// text, never markup) and schema.
func TestCatalogueInTheConsole(t *testing.T) {
	ctx := browser(t)
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := catalogConfig(t, t.TempDir(), "enforce", true, r)
	cfg.Admin.Token = config.NewSecret(consoleToken)
	h := startHookjet(t, cfg, server.Options{})
	c := client.New("http://"+h.srv.AdminAddr(), client.WithToken(consoleToken))
	if _, err := c.CreateEventType(t.Context(), api.EventType{Name: "lead.created", Description: xss}); err != nil {
		t.Fatal(err)
	}
	base := "http://" + h.srv.AdminAddr()
	run(t, ctx, "sign in",
		chromedp.Navigate(base+"/console/"),
		chromedp.WaitVisible(chromedp.CSS(`input[name=token]`)),
		chromedp.SendKeys(chromedp.CSS(`input[name=token]`), consoleToken),
		chromedp.Submit(chromedp.CSS(`input[name=token]`)),
		chromedp.WaitVisible(chromedp.CSS(`section.figures`)))
	run(t, ctx, "open the catalogue",
		chromedp.Click(chromedp.CSS(`nav a[href="/console/event-types"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table.eventtypes`)))
	screenshot(t, ctx, "console-event-types")
	if got := text(t, ctx, `p.muted`); !strings.Contains(got, "checked enforce, and types not listed here are refused (strict)") {
		t.Errorf("mode line %q", got)
	}
	for sel, want := range map[string]string{
		`tr[id="type-order.created"]`:       "order.created config An order was placed. schema",
		`tr[id="type-hookjet.dead_letter"]`: "hookjet.dead_letter builtin",
		`tr[id="type-lead.created"]`:        "lead.created api " + xss + " any payload",
	} {
		got := strings.Join(strings.Fields(text(t, ctx, sel)), " ")
		if !strings.HasPrefix(got, strings.Join(strings.Fields(want), " ")) {
			t.Errorf("%s: %q, want it to start with %q", sel, got, want)
		}
	}
	run(t, ctx, "open a schema",
		chromedp.Click(chromedp.CSS(`tr[id="type-order.created"] details summary`)),
		chromedp.WaitVisible(chromedp.CSS(`tr[id="type-order.created"] details pre`)))
	if got := text(t, ctx, `tr[id="type-order.created"] details pre`); !strings.Contains(got, `"required": [`) {
		t.Errorf("schema shown: %q", got)
	}
}

// The catalogue is shared: a type created through one process's API, and a
// type only one process's file declares, are known to another process on
// the same NATS within 2 s, which enforces their schemas on its own
// publish path; a type deleted on one is gone on the other.
func TestEventTypesSharedAcrossProcesses(t *testing.T) {
	ns := startNATSNode(t, "shared", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	var hs []*hookjet
	for i, extra := range []string{fmt.Sprintf(catalogYAML, "enforce", false), "catalog:\n  validate: enforce\n"} {
		cfg := testConfig(t, t.TempDir(), extra, endpointYAML{ID: fmt.Sprintf("sink%d", i), URL: r.URL})
		cfg.NATS.URL = ns.url()
		hs = append(hs, startHookjet(t, cfg, server.Options{}))
	}
	c0 := client.New("http://" + hs[0].srv.AdminAddr())
	c1 := client.New("http://" + hs[1].srv.AdminAddr())
	if _, err := c0.CreateEventType(t.Context(), api.EventType{Name: "invoice.paid", Schema: json.RawMessage(`{"type":"object","required":["invoice"]}`)}); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		for name, source := range map[string]string{"invoice.paid": "api", "order.created": "config"} {
			et, err := c1.EventType(t.Context(), name)
			if err != nil || et.Source != source {
				return fmt.Errorf("%s on the second process: %+v %w, want source %s", name, et, err, source)
			}
		}
		return nil
	})
	code, body := postEvents(t, hs[1].srv.AdminAddr(), "", map[string]any{"events": []any{
		map[string]any{"type": "order.created", "data": map[string]any{"amount": "1"}},
		map[string]any{"type": "invoice.paid", "data": map[string]any{}},
	}})
	wantProblems(t, "second process", code, body, http.StatusUnprocessableEntity, map[string]string{
		"events[0].data/amount":  "events[0].data/amount: want number, got string",
		"events[1].data/invoice": "events[1].data/invoice: is required",
	})
	if err := c1.DeleteEventType(t.Context(), "invoice.paid"); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 2*time.Second, 10*time.Millisecond, func() error {
		if _, err := c0.EventType(t.Context(), "invoice.paid"); !errors.Is(err, api.ErrUnknownEventType) {
			return fmt.Errorf("invoice.paid on the first process after the delete: %w", err)
		}
		return nil
	})
}

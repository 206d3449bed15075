package admin

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/eventindex"
	"github.com/hookjet/hookjet/internal/apicheck"
)

var published = time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)

// bigJSON is a JSON payload longer than what the view shows.
var bigJSON = append(append([]byte(`{"pad":"`), bytes.Repeat([]byte("x"), api.MaxPayloadShown)...), `"}`...)

// viewEvents is an event log of events with a JSON payload, a text one and
// a long one.
func viewEvents(_ context.Context, id string) (EventInfo, bool, error) {
	base := EventInfo{Seq: 7, Type: "order.created", PublishedAt: published, Tenant: "acme", Key: "cust-1", ContentType: "application/json"}
	switch id {
	case "evt_json":
		base.Data = []byte(`{ "amount": 10,
			"currency": "EUR", "note": "<b>&</b>" }`)
	case "evt_text":
		base.ContentType, base.Data = "text/plain", []byte("not json")
	case "evt_big":
		base.Data = bigJSON
	default:
		return EventInfo{}, false, nil
	}
	base.Size = len(base.Data)
	return base, true, nil
}

const secretVal = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// viewTargets are the endpoints the events match: one whose filter refuses
// them, a disabled one, one with an open breaker, one held by a receiver,
// a healthy one with a secret, headers and a bearer token, and one created
// after the events were published.
type viewTargets struct{}

func (viewTargets) EventTargets(tenant, typ string) []EventTarget {
	if tenant != "acme" || typ != "order.created" {
		return nil
	}
	ep := func(id string) config.Endpoint {
		return config.Endpoint{ID: id, URL: "https://u:pw@" + id + ".example.com/hooks", Tenant: "acme", CreatedAt: published.Add(-time.Hour)}
	}
	big, dis, brk, hold, ok, late := ep("big"), ep("dis"), ep("brk"), ep("hold"), ep("ok"), ep("late")
	big.Filter = "data.amount > 1000"
	ok.Secrets = []config.Secret{config.NewSecret(secretVal)}
	ok.Headers = map[string]config.Secret{"x-api-key": config.NewSecret(headerVal)}
	ok.Auth = config.Auth{Type: "bearer", Token: config.NewSecret("tok-secret")}
	late.CreatedAt = published.Add(time.Minute)
	return []EventTarget{
		{Endpoint: big}, {Endpoint: brk, BreakerOpenUntil: published.Add(5 * time.Minute)}, {Endpoint: dis, Disabled: true},
		{Endpoint: hold, HoldUntil: published.Add(time.Minute)}, {Endpoint: late}, {Endpoint: ok},
	}
}

// indexList serves the event list from a real event index.
type indexList struct{ x *eventindex.Index }

func (l indexList) Page(_ context.Context, q api.EventQuery) (api.EventPage, error) {
	entries, next, err := l.x.Page(eventindex.Query{Type: q.Type, Tenant: q.Tenant, Prefix: q.Prefix, Since: q.Since, Until: q.Until, Before: q.Cursor, Limit: q.Limit})
	page := api.EventPage{Events: []api.EventSummary{}}
	for _, e := range entries {
		page.Events = append(page.Events, api.EventSummary{ID: e.ID, Type: e.Type, Tenant: e.Tenant, Key: e.Key, PublishedAt: e.PublishedAt, Size: e.Size, Seq: e.Seq})
	}
	if next > 0 {
		page.Next = strconv.FormatUint(next, 10)
	}
	return page, err
}

func eventFixture(t *testing.T) *fixture {
	t.Helper()
	x, err := eventindex.Open(filepath.Join(t.TempDir(), "event-index.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close() })
	for i := uint64(1); i <= 30; i++ {
		tenant := "acme"
		if i%3 == 0 {
			tenant = "globex"
		}
		if err := x.Add(eventindex.Entry{Seq: i, ID: "evt_" + strconv.FormatUint(i, 10), Type: "order.created", Tenant: tenant, PublishedAt: published.Add(time.Duration(i) * time.Second), Size: 10}); err != nil {
			t.Fatal(err)
		}
	}
	f := newFixture(t, WithDeliveryLog(nil, viewEvents), WithEvents(indexList{x}, viewTargets{}, "hookjet/test"))
	check, err := apicheck.New(http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	f.client = &http.Client{Transport: check}
	t.Cleanup(func() {
		if check.Checked() == 0 {
			t.Error("apicheck checked nothing")
		}
		for _, fail := range check.Failures() {
			t.Errorf("against api/openapi.json: %s", fail)
		}
	})
	return f
}

// raw GETs path and returns the status and the body as it came.
func (f *fixture) raw(t *testing.T, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

func TestEventViewShowsThePayloadAsJSONBase64OrCut(t *testing.T) {
	f := eventFixture(t)
	status, _, out := f.do(t, http.MethodGet, "/api/v1/events/evt_json", "")
	if status != 200 || out["tenant"] != "acme" || out["key"] != "cust-1" || out["seq"] != float64(7) {
		t.Fatalf("evt_json: %d %v", status, out)
	}
	if d, _ := out["data"].(map[string]any); d["amount"] != float64(10) || d["currency"] != "EUR" || out["data_base64"] != nil || out["data_truncated"] != nil {
		t.Fatalf("evt_json's payload: %v", out)
	}
	if _, body := f.raw(t, "/api/v1/events/evt_json"); !strings.Contains(body, `"note": "<b>&</b>"`) {
		t.Fatalf("evt_json's payload, want its strings as published:\n%s", body)
	}
	_, _, out = f.do(t, http.MethodGet, "/api/v1/events/evt_text", "")
	if out["data_base64"] != base64.StdEncoding.EncodeToString([]byte("not json")) || out["data"] != nil || out["content_type"] != "text/plain" {
		t.Fatalf("evt_text's payload: %v", out)
	}
	_, _, out = f.do(t, http.MethodGet, "/api/v1/events/evt_big", "")
	shown, err := base64.StdEncoding.DecodeString(out["data_base64"].(string))
	if err != nil || !bytes.Equal(shown, bigJSON[:api.MaxPayloadShown]) || out["data_truncated"] != true || out["size"] != float64(len(bigJSON)) {
		t.Fatalf("evt_big: %d bytes shown (%v), truncated %v, size %v", len(shown), err, out["data_truncated"], out["size"])
	}
}

func TestEventViewHidesPayloadsWhenConsoleShowPayloadsIsOff(t *testing.T) {
	f := eventFixture(t)
	f.cfg.Console.ShowPayloads = false
	for _, id := range []string{"evt_json", "evt_text", "evt_big"} {
		status, body := f.raw(t, "/api/v1/events/"+id)
		if status != 200 || !strings.Contains(body, `"data_hidden": true`) || strings.Contains(body, `"data"`) || strings.Contains(body, `"data_base64"`) ||
			strings.Contains(body, "EUR") {
			t.Fatalf("%s with show_payloads off: %d %s", id, status, body)
		}
	}
}

func TestEventViewSaysPerEndpointWhyAnEventWasNotDelivered(t *testing.T) {
	f := eventFixture(t)
	status, body := f.raw(t, "/api/v1/events/evt_json")
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	for _, secret := range []string{headerVal, secretVal, "tok-secret", "pw@"} {
		if strings.Contains(body, secret) {
			t.Fatalf("the view shows the secret value %q: %s", secret, body)
		}
	}
	_, _, out := f.do(t, http.MethodGet, "/api/v1/events/evt_json", "")
	got := map[string]map[string]any{}
	for _, d := range out["deliveries"].([]any) {
		d := d.(map[string]any)
		got[d["endpoint"].(string)] = d
	}
	want := map[string][2]string{ // state, held
		"big": {"filtered_out", ""}, "dis": {"pending", "disabled"}, "brk": {"pending", "breaker_open"},
		"hold": {"pending", "retry_after"}, "ok": {"pending", ""},
	}
	if len(got) != len(want) {
		t.Fatalf("deliveries of %d endpoints, want %d (late, created after the event, left out): %v", len(got), len(want), out["deliveries"])
	}
	for id, w := range want {
		d := got[id]
		held, _ := d["held"].(string)
		if d["state"] != w[0] || held != w[1] {
			t.Errorf("%s: state %v held %q, want %s %q (%v)", id, d["state"], held, w[0], w[1], d)
		}
	}
	if r, _ := got["big"]["reason"].(string); !strings.Contains(r, "filter is false") {
		t.Errorf("big's reason %q", r)
	}
	if got["brk"]["held_until"] != published.Add(5*time.Minute).Format(time.RFC3339) {
		t.Errorf("brk held until %v", got["brk"]["held_until"])
	}
	req := got["ok"]["request"].(map[string]any)
	h := req["headers"].(map[string]any)
	if req["method"] != "POST" || req["url"] != "https://u:xxxxx@ok.example.com/hooks" || req["destination"] != "webhook" {
		t.Errorf("ok's request: %v", req)
	}
	for name, v := range map[string]string{
		"X-Api-Key": redacted, "Authorization": redacted, "webhook-signature": redacted, "webhook-id": "evt_json",
		"webhook-timestamp": perAttempt, "Content-Type": "application/json", "User-Agent": "hookjet/test",
		"Hookjet-Event-Type": "order.created", "Hookjet-Tenant": "acme", "Hookjet-Ordering-Key": "cust-1",
	} {
		if h[name] != v {
			t.Errorf("ok's request header %s = %v, want %q", name, h[name], v)
		}
	}
}

func TestEventViewForATenantShowsOnlyItsEvents(t *testing.T) {
	f := eventFixture(t)
	if status, _, _ := f.do(t, http.MethodGet, "/api/v1/events/evt_json?tenant=globex", ""); status != http.StatusNotFound {
		t.Fatalf("acme's event for globex: %d, want 404", status)
	}
	if status, _, out := f.do(t, http.MethodGet, "/api/v1/events/evt_json?tenant=acme", ""); status != 200 || len(out["deliveries"].([]any)) != 5 {
		t.Fatalf("acme's event for acme: %d %v", status, out)
	}
}

func TestEventListPagesNewestFirstWithFilters(t *testing.T) {
	f := eventFixture(t)
	var ids []string
	path := "/api/v1/events?tenant=acme&limit=7"
	for range 10 {
		status, _, out := f.do(t, http.MethodGet, path, "")
		if status != 200 {
			t.Fatalf("%s: %d %v", path, status, out)
		}
		for _, e := range out["events"].([]any) {
			ids = append(ids, e.(map[string]any)["id"].(string))
		}
		if out["next"] == "" {
			break
		}
		path = "/api/v1/events?tenant=acme&limit=7&cursor=" + out["next"].(string)
	}
	if len(ids) != 20 || ids[0] != "evt_29" || ids[19] != "evt_1" {
		t.Fatalf("acme's events: %v", ids)
	}
	_, _, out := f.do(t, http.MethodGet, "/api/v1/events?prefix=evt_2&since="+published.Add(25*time.Second).Format(time.RFC3339)+"&until="+published.Add(28*time.Second).Format(time.RFC3339), "")
	if evs := out["events"].([]any); len(evs) != 3 || evs[0].(map[string]any)["id"] != "evt_27" {
		t.Fatalf("prefix and window: %v", out)
	}
	for _, tt := range []struct{ query, field string }{
		{"limit=0", "limit"}, {"limit=1001", "limit"}, {"cursor=abc", "cursor"}, {"since=yesterday", "since"},
		{"type=order.*", "type"}, {"tenant=a.b", "tenant"},
	} {
		status, _, out := f.do(t, http.MethodGet, "/api/v1/events?"+tt.query, "")
		if status != http.StatusBadRequest || out["field"] != tt.field {
			t.Errorf("%s: %d %v, want 400 naming %s", tt.query, status, out, tt.field)
		}
	}
}

package admin

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/internal/apicheck"
)

// storedEvents is an event log of two events, of tenants acme and globex.
func storedEvents(_ context.Context, id string) (EventInfo, bool, error) {
	switch id {
	case "evt_acme":
		return EventInfo{Type: "order.created", Tenant: "acme", Key: "k1", ContentType: "application/json",
			Headers: map[string][]string{"X-Region": {"eu"}}, Data: []byte(`{"amount":1500,"currency":"EUR","id":"o7"}`)}, true, nil
	case "evt_globex":
		return EventInfo{Type: "order.created", Tenant: "globex", Data: []byte(`{"amount":1}`)}, true, nil
	}
	return EventInfo{}, false, nil
}

const filteredBody = `{"id":"shop","url":"https://shop.example.com/hooks","events":["order.*"],"tenant":"acme",
	"headers":{"X-Api-Key":"` + headerVal + `"},
	"filter":"data.amount > 1000 && data.currency == \"EUR\" && headers[\"x-region\"] == \"eu\"",
	"transform":"function handler(w) {\n  w.payload = {text: \"order \" + w.payload.id, tenant: w.event.tenant};\n  w.headers[\"X-Kind\"] = w.eventType;\n  return w;\n}"}`

func TestFilterAndTransformOnEndpoint(t *testing.T) {
	f := newFixture(t, WithDeliveryLog(nil, storedEvents))
	check, err := apicheck.New(http.DefaultTransport)
	if err != nil {
		t.Fatal(err)
	}
	f.client = &http.Client{Transport: check}
	defer func() {
		if check.Checked() == 0 {
			t.Error("apicheck checked nothing")
		}
		for _, fail := range check.Failures() {
			t.Errorf("against api/openapi.json: %s", fail)
		}
	}()
	status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints", filteredBody)
	if status != http.StatusCreated {
		t.Fatalf("create: %d %v", status, out)
	}
	if !strings.HasPrefix(out["filter"].(string), "data.amount > 1000") || !strings.HasPrefix(out["transform"].(string), "function handler") {
		t.Fatalf("the answer lacks filter or transform: %v", out)
	}
	if s := out["settings"].(map[string]any); s["transform_timeout"] != "50ms" || s["transform_max_memory"] != float64(64<<20) {
		t.Fatalf("settings %v", s)
	}

	for _, tt := range []struct {
		name, path, body string
		status           int
		want             map[string]any
	}{
		{"stored event matches", "filter/test", `{"event_id":"evt_acme"}`, 200, map[string]any{"match": true}},
		{"another tenant's event is not found", "filter/test", `{"event_id":"evt_globex"}`, 404, nil},
		{"unknown event", "filter/test", `{"event_id":"evt_none"}`, 404, nil},
		{"inline event refused", "filter/test", `{"event":{"type":"order.created","data":{"amount":10,"currency":"EUR"},"headers":{"X-Region":"eu"}}}`, 200, map[string]any{"match": false}},
		{"evaluation error is no match", "filter/test", `{"event":{"type":"order.created","data":{"currency":"EUR"}}}`, 200, map[string]any{"match": false}},
		{"candidate filter", "filter/test", `{"event_id":"evt_acme","filter":"tenant == \"acme\" && key == \"k1\""}`, 200, map[string]any{"match": true}},
		{"candidate that does not compile", "filter/test", `{"event_id":"evt_acme","filter":"data.amount >"}`, 400, map[string]any{"field": "filter"}},
		{"neither", "filter/test", `{}`, 400, map[string]any{"field": "event_id"}},
		{"both", "filter/test", `{"event_id":"evt_acme","event":{"type":"a"}}`, 400, map[string]any{"field": "event"}},
		{"unknown field", "filter/test", `{"evnt_id":"x"}`, 400, nil},
		{"candidate script that throws", "transform/test", `{"event_id":"evt_acme","transform":"function handler(w) {\n  throw new Error('no');\n}"}`, 200, map[string]any{"error": "transform: 2:9: Error: no"}},
		{"cancel", "transform/test", `{"event_id":"evt_acme","transform":"function handler(w) { w.cancel = true; return w }"}`, 200, map[string]any{"cancel": true}},
		{"script that does not compile", "transform/test", `{"event_id":"evt_acme","transform":"function handler(w) {"}`, 400, map[string]any{"field": "transform"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints/shop/"+tt.path, tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, out)
			}
			for k, v := range tt.want {
				if out[k] != v {
					t.Errorf("%s = %v, want %v (%v)", k, out[k], v, out)
				}
			}
			if _, has := out["error"]; tt.status == 200 && has && tt.want["error"] == nil && tt.path == "filter/test" && tt.name != "evaluation error is no match" {
				t.Errorf("unexpected error: %v", out)
			}
		})
	}

	// The request the endpoint's own transform would send.
	status, _, out = f.do(t, http.MethodPost, "/api/v1/endpoints/shop/transform/test", `{"event_id":"evt_acme"}`)
	if status != http.StatusOK {
		t.Fatalf("transform test: %d %v", status, out)
	}
	req, _ := out["request"].(map[string]any)
	if req["url"] != "https://shop.example.com/hooks" || req["body"] != `{"text":"order o7","tenant":"acme"}` {
		t.Fatalf("request %v", req)
	}
	h, _ := req["headers"].(map[string]any)
	if h["X-Kind"] != "order.created" || h["X-Api-Key"] != redacted || h["webhook-signature"] != redacted || h["Content-Type"] != "application/json" {
		t.Fatalf("headers %v", h)
	}

	// A filter or transform that does not compile is refused at change,
	// naming the field and the position.
	status, _, out = f.do(t, http.MethodPatch, "/api/v1/endpoints/shop", `{"filter":"data.amount >"}`)
	if status != http.StatusBadRequest || out["field"] != "filter" || !strings.HasPrefix(out["error"].(string), "filter: 1:14: ") {
		t.Fatalf("bad filter: %d %v", status, out)
	}
	status, _, out = f.do(t, http.MethodPatch, "/api/v1/endpoints/shop", `{"transform":"function handler(w) {\n  return w +;\n}"}`)
	if status != http.StatusBadRequest || out["field"] != "transform" || !strings.HasPrefix(out["error"].(string), "transform: 2:13: SyntaxError") {
		t.Fatalf("bad transform: %d %v", status, out)
	}
	// Removing the filter matches every event.
	status, _, out = f.do(t, http.MethodPatch, "/api/v1/endpoints/shop", `{"filter":null}`)
	if status != http.StatusOK || out["filter"] != nil {
		t.Fatalf("remove filter: %d %v", status, out)
	}
	status, _, out = f.do(t, http.MethodPost, "/api/v1/endpoints/shop/filter/test", `{"event":{"type":"order.created"}}`)
	if status != http.StatusOK || out["match"] != true {
		t.Fatalf("no filter: %d %v", status, out)
	}
}

package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/server"
)

// hookjet as the server starts it publishes its own events: an operator's
// endpoint on hookjet.> receives hookjet.endpoint.disabled and enabled,
// signed like every webhook, when an operator disables and enables
// another endpoint through the admin API; the endpoint on > receives
// neither; a plain NATS publish of a hookjet.* type goes to no one; and
// POST /api/v1/events refuses a hookjet.* type, naming type.
func TestServerPublishesOperationalEvents(t *testing.T) {
	oncall := newReceiver(t, []string{secretA, secretB}, nil)
	shop := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "oncall", URL: oncall.URL, Events: []string{"hookjet.>"}},
		endpointYAML{ID: "shop", URL: shop.URL, Events: []string{">"}})
	h := startHookjet(t, cfg, server.Options{})

	var refused struct {
		Field string `json:"field"`
		Error string `json:"error"`
	}
	if code := h.api("POST", "/api/v1/events", "", map[string]any{"type": "hookjet.endpoint.disabled", "data": map[string]any{}}, &refused); code != http.StatusBadRequest || refused.Field != "type" {
		t.Fatalf("publishing hookjet.endpoint.disabled: HTTP %d %+v, want 400 naming type", code, refused)
	}
	forged := nats.NewMsg("hookjet.events.hookjet.endpoint.disabled")
	forged.Header.Set("Nats-Msg-Id", "forged")
	forged.Header.Set("Hookjet-Origin", "v1,AAAA")
	forged.Data = []byte(`{"type":"hookjet.endpoint.disabled","endpoint":{"id":"shop","description":""},"tenant":"","reason":"gone","count":1,"at":"2026-12-07T01:00:00Z"}`)
	if _, err := h.js.PublishMsg(t.Context(), forged); err != nil {
		t.Fatal(err)
	}
	for _, action := range []string{"disable", "enable"} {
		if code := h.api("POST", "/api/v1/endpoints/shop/"+action, "", nil, nil); code != http.StatusOK {
			t.Fatalf("%s shop: HTTP %d", action, code)
		}
	}
	h.publish("order.created", "evt_after", []byte(`{"n":1}`))
	shop.waitFor(t, "evt_after")
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if n := oncall.count(); n < 2 {
			return fmt.Errorf("oncall has %d events, want 2", n)
		}
		return nil
	})
	h.settle("order.created", shop)
	var got []string
	for _, d := range oncall.deliveries() {
		var p struct {
			Type     string `json:"type"`
			Endpoint struct {
				ID string `json:"id"`
			} `json:"endpoint"`
			Reason string `json:"reason"`
			Count  int    `json:"count"`
		}
		if err := json.Unmarshal(d.Body, &p); err != nil {
			t.Fatalf("%s: %v", d.Body, err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %d", p.Type, p.Endpoint.ID, p.Reason, p.Count))
	}
	slices.Sort(got)
	if want := []string{"hookjet.endpoint.disabled shop operator 1", "hookjet.endpoint.enabled shop operator 1"}; !slices.Equal(got, want) {
		t.Errorf("oncall got %q, want %q", got, want)
	}
	if ds := shop.deliveries(); len(ds) != 1 || ds[0].ID != "evt_after" {
		t.Errorf("shop, on >, got %d deliveries (%v), want evt_after only", len(ds), ds)
	}
}

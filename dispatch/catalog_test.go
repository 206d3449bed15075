package dispatch

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/catalog"
	"github.com/hookjet/hookjet/config"
)

// rigCatalog is the catalogue of cfg's catalog section: its mode,
// strictness and file types (nil without any type, like a server with an
// empty file).
func rigCatalog(t *testing.T, cfg *config.Config) *catalog.Live {
	t.Helper()
	if len(cfg.Catalog.EventTypes) == 0 {
		return nil
	}
	types, err := cfg.Catalog.CompileEventTypes()
	if err != nil {
		t.Fatal(err)
	}
	return catalog.NewLive(catalog.New(cfg.Catalog.Mode(), cfg.Catalog.Strict, types, nil))
}

// Under catalog.validate enforce an event whose payload fails its type's
// schema is delivered to no one: each endpoint it matched gets it as a dead
// letter invalid, with the problems as its last error, once whatever the
// number of endpoints; valid events and types without a schema go as
// usual.
func TestFanoutDeadLettersInvalidEvents(t *testing.T) {
	rc := newReceiver(t)
	r := newRig(t, []config.Endpoint{endpointTo("a", rc, "order.*"), endpointTo("b", rc, ">"), endpointTo("c", rc, "lead.*")}, func(c *config.Config) {
		c.Catalog = config.Catalog{Validate: "enforce", EventTypes: []config.EventType{{
			Name:   "order.created",
			Schema: config.JSON(`{"type":"object","required":["amount"],"properties":{"amount":{"type":"number"}}}`),
		}}}
	})
	r.publish("order.created", "bad", "", `{"amount":"12"}`)
	r.publish("order.created", "good", "", `{"amount":12}`)
	r.publish("order.paid", "free", "", `"any payload"`)
	rc.waitDelivered([]string{"a free", "a good", "b free", "b good"}, 15*time.Second)
	r.settled(10 * time.Second)
	for _, ep := range []string{"a", "b"} {
		if got := r.deadLetters(ep); !slices.Equal(got, []string{"bad invalid"}) {
			t.Errorf("%s dead letters %v, want [bad invalid]", ep, got)
		}
		if n := rc.requests(ep, "bad"); n != 0 {
			t.Errorf("%s was sent the invalid event %d times", ep, n)
		}
	}
	if got := r.deadLetters("c"); len(got) != 0 {
		t.Errorf("c, which does not match, has dead letters %v", got)
	}
	entries, err := r.d.Queries().DeadLetters(t.Context(), api.DLQFilter{Endpoint: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].LastError != "/amount: want number, got string" {
		raw, _ := json.Marshal(entries)
		t.Errorf("a's dead letter %s, want the problem as its last error", raw)
	}
	if n := testutil.ToFloat64(r.d.o.Metrics.InvalidEvents.WithLabelValues("order.created")); n != 1 {
		t.Errorf("hookjet_invalid_events_total{type=order.created} = %v, want 1 (once per event)", n)
	}
}

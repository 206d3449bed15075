package test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/cli"
)

// HOOKJET_TASKS keeps a waiting delivery until hookjet expires it, also for
// an endpoint created through the admin API with a retry.max_age longer
// than anything in the config file: the server never ages a task out
// first.
func TestTasksOutliveAPIEndpointRetryMaxAge(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "streams:\n  max_age: 4s\n  duplicate_window: 1s\n")
	h := startHookjet(t, cfg, cli.Options{})
	tasksAge := func() time.Duration {
		st, err := h.js.Stream(t.Context(), "HOOKJET_TASKS")
		if err != nil {
			t.Fatal(err)
		}
		return st.CachedInfo().Config.MaxAge
	}
	if got := tasksAge(); got != 0 && got < cfg.Defaults.Retry.MaxAge {
		t.Fatalf("HOOKJET_TASKS max_age %s is shorter than the default retry.max_age %s", got, cfg.Defaults.Retry.MaxAge)
	}
	body := map[string]any{"id": "long", "url": rcv.URL, "secrets": []string{secretA, secretB}, "retry": map[string]any{"max_age": "72h"}}
	if code := h.api("POST", "/api/v1/endpoints", "", body, nil); code != http.StatusCreated {
		t.Fatalf("create: HTTP %d", code)
	}
	got := tasksAge()
	t.Logf("streams.max_age %s, API endpoint retry.max_age 72h: HOOKJET_TASKS max_age %s", cfg.Streams.MaxAge, got)
	if got != 0 && got < 72*time.Hour {
		t.Fatalf("HOOKJET_TASKS max_age %s: the server would drop the endpoint's waiting deliveries before its retry.max_age 72h", got)
	}
}

// A disabled endpoint's waiting deliveries expire by their event's age, not
// their place in the stream: a task of an old event stored after one of a
// new event (a retry stored again, a requeue) is dead-lettered as expired
// all the same, and the fresh one stays.
func TestExpiryLooksPastAFreshTask(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "off", URL: rcv.URL})
	h := startHookjet(t, cfg, cli.Options{})
	if code := h.api("POST", "/api/v1/endpoints/off/disable", "", nil, nil); code != http.StatusOK {
		t.Fatalf("disable: HTTP %d", code)
	}
	task := func(id string, published time.Time) {
		m := nats.NewMsg("hookjet.tasks.off")
		m.Data = []byte(`{"n":1}`)
		m.Header.Set("Nats-Msg-Id", "task-off-"+id)
		m.Header.Set("Hookjet-Event-Id", id)
		m.Header.Set("Hookjet-Event-Type", "order.created")
		m.Header.Set("Hookjet-Endpoint", "off")
		m.Header.Set("Hookjet-Event-Key", "t"+id)
		m.Header.Set("Hookjet-Published", published.UTC().Format(time.RFC3339Nano))
		if _, err := h.js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	task("evt-fresh", time.Now())                                 // first in the stream, not expired
	task("evt-old", time.Now().Add(-2*cfg.Defaults.Retry.MaxAge)) // behind it, long past retry.max_age
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		for _, e := range h.dlq("?endpoint=off") {
			if e.EventID == "evt-old" && e.Reason == "expired" {
				return nil
			}
		}
		return fmt.Errorf("evt-old (published %s ago, retry.max_age %s) not dead-lettered as expired", 2*cfg.Defaults.Retry.MaxAge, cfg.Defaults.Retry.MaxAge)
	})
	for _, e := range h.dlq("?endpoint=off") {
		if e.EventID == "evt-fresh" {
			t.Fatalf("the fresh task was dead-lettered: %+v", e)
		}
	}
	st, err := h.js.Stream(t.Context(), "HOOKJET_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context(), natsjsSubjects("hookjet.tasks.off"))
	if err != nil {
		t.Fatal(err)
	}
	if n := info.State.Subjects["hookjet.tasks.off"]; n != 1 {
		t.Fatalf("tasks left for off: %d, want the fresh one", n)
	}
}

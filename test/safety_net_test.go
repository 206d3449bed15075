package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// A message that hits JetStream's MaxDeliver still ends up in HOOKJET_DLQ:
// the server's MAX_DELIVERIES advisory is captured in HOOKJET_ADVISORIES and
// hookjet dead-letters the event it names for every matching endpoint that
// has not had it. An advisory whose message is gone is counted as an error,
// never taken for success.
func TestMaxDeliverSafetyNet(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "net", URL: r.URL}), cli.Options{})
	// Disabled, so hookjet itself sends nothing: only the advisory acts.
	if code := h.api("POST", "/api/v1/endpoints/net/disable", "", nil, nil); code != http.StatusOK {
		t.Fatalf("disable: HTTP %d", code)
	}
	ack := h.publish("order.created", "evt_net", []byte(`{"n":1}`))
	advise := func(seq uint64) {
		b, _ := json.Marshal(map[string]any{"stream": "HOOKJET_EVENTS", "consumer": "hookjet-fanout", "stream_seq": seq, "deliveries": 100})
		if _, err := h.js.Publish(t.Context(), "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.HOOKJET_EVENTS.hookjet-fanout", b); err != nil {
			t.Fatal(err)
		}
	}
	advise(ack.Sequence)
	var dl []dlqEntry
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if dl = h.dlq(""); len(dl) != 1 {
			return fmt.Errorf("dead letters: %d", len(dl))
		}
		return nil
	})
	e := dl[0]
	if e.Reason != "exhausted" || e.EventID != "evt_net" || e.Endpoint != "net" || !strings.Contains(e.LastError, "MaxDeliver") {
		t.Fatalf("dead letter %+v", e)
	}
	if r.count() != 0 {
		t.Fatalf("a disabled endpoint got %d requests", r.count())
	}
	advise(ack.Sequence + 1000) // names nothing stored
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if v := h.metric("hookjet_safety_net_errors_total"); v != 1 {
			return fmt.Errorf("hookjet_safety_net_errors_total = %v", v)
		}
		return nil
	})
}

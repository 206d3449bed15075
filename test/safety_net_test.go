package test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// A message that hits JetStream's MaxDeliver before hookjet's own attempt
// limit still ends up in HOOKJET_DLQ: the server's MAX_DELIVERIES advisory is
// captured in HOOKJET_ADVISORIES and hookjet moves the message it names.
func TestMaxDeliverSafetyNet(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "net", URL: r.URL,
		Extra: "    retry: {max_attempts: 50}\n    breaker: {failure_threshold: 1000}\n"}), cli.Options{})
	// Lower the consumer's MaxDeliver behind hookjet's back, far below
	// retry.max_attempts, as if deferrals had used up the deliveries.
	cons, err := h.js.Consumer(t.Context(), "HOOKJET_EVENTS", "ep-net")
	if err != nil {
		t.Fatal(err)
	}
	cc := cons.CachedInfo().Config
	cc.MaxDeliver = 2
	if _, err := h.js.UpdateConsumer(t.Context(), "HOOKJET_EVENTS", cc); err != nil {
		t.Fatal(err)
	}
	h.publish("order.created", "evt_net", []byte(`{"n":1}`))
	var dl []dlqEntry
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if dl = h.dlq(""); len(dl) != 1 {
			return fmt.Errorf("dead letters: %d (requests %d)", len(dl), r.count())
		}
		return nil
	})
	e := dl[0]
	if e.Reason != "exhausted" || e.EventID != "evt_net" || e.Endpoint != "net" || e.Attempts != 2 || e.LastStatus != "503" {
		t.Fatalf("dead letter %+v", e)
	}
	if r.count() != 2 {
		t.Fatalf("endpoint got %d requests, want MaxDeliver = 2", r.count())
	}
}

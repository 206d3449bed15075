package test

import (
	"context"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// Two hookjet processes on one deployment: an event id republished after
// JetStream's duplicate window is not delivered again, whichever process
// handles the republished copy.
func TestTwoProcessesDedupeBeyondWindow(t *testing.T) {
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	for range 2 {
		cfg := testConfig(t, t.TempDir(), "streams:\n  duplicate_window: 1s\n", endpointYAML{ID: "sink", URL: r.URL})
		cfg.NATS.URL = ns.url()
		startHookjet(t, cfg, cli.Options{})
	}
	_, js := connectJS(t, ns.url())
	ids := eventIDs("evt_twice", 40)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var st pubStats
	if err := publishRetrying(ctx, js, ids, 4, 0, &st); err != nil {
		t.Fatal(err)
	}
	waitAllDelivered(t, r, ids, 20*time.Second)
	time.Sleep(1500 * time.Millisecond) // past the duplicate window
	if err := publishRetrying(ctx, js, ids, 4, 0, &st); err != nil {
		t.Fatal(err)
	}
	markers := eventIDs("evt_marker", 40)
	if err := publishRetrying(ctx, js, markers, 4, 0, &st); err != nil {
		t.Fatal(err)
	}
	waitAllDelivered(t, r, markers, 20*time.Second)
	waitSettled(t, js, "sink", 10*time.Second)
	for _, id := range ids {
		if n := r.requestsFor(id); n != 1 {
			t.Errorf("%s delivered %d times", id, n)
		}
	}
}

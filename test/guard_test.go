package test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// A delivery refused before any request (here: its payload is over
// security.max_payload_bytes) whose dead letter takes longer than a guard's
// delay is never guarded: the guard sweeper must not store a retry of it
// while the dead letter is being written (it would read the attempt state
// as it changes).
func TestRefusedDeliveryIsNeverGuarded(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) { w.WriteHeader(http.StatusNoContent) })
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "crm", URL: r.URL})
	cfg.Security.MaxPayloadBytes = 1024
	dead := make(chan struct{})
	h := startHookjet(t, cfg, cli.Options{OnDeadLetter: func(string, string) {
		time.Sleep(2500 * time.Millisecond) // past the guard's delay (1 s) and its sweep
		close(dead)
	}})
	h.publish("order.created", "evt_big", []byte(`{"pad":"`+strings.Repeat("x", 2048)+`"}`))
	select {
	case <-dead:
	case <-time.After(15 * time.Second):
		t.Fatal("the oversized event was never dead-lettered")
	}
	st, err := h.js.Stream(t.Context(), "HOOKJET_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if last := info.State.LastSeq; last != 0 {
		t.Errorf("HOOKJET_TASKS received %d message(s) (a guard) for a delivery that was never attempted", last)
	}
	if n := r.count(); n != 0 {
		t.Errorf("the receiver got %d request(s) for an oversized event", n)
	}
}

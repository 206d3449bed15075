package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// "delivered (last hour)" is the last hour's, whichever process answers
// and after a restart: it does not start again at 0 with each process.
func TestSummaryLastHourSurvivesRestart(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "crm", URL: rcv.URL})
	h := startHookjet(t, cfg, cli.Options{})
	for i := range 5 {
		h.publish("order.created", fmt.Sprintf("ord-%d", i), []byte(`{}`))
	}
	var sum struct {
		Delivered int64 `json:"delivered_last_hour"`
		Failed    int64 `json:"failed_last_hour"`
	}
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if code := h.api("GET", "/api/v1/summary", "", nil, &sum); code != 200 || sum.Delivered != 5 {
			return fmt.Errorf("summary: HTTP %d delivered_last_hour %d, want 5", code, sum.Delivered)
		}
		return nil
	})
	h.stop()
	h = startHookjet(t, cfg, cli.Options{})
	if code := h.api("GET", "/api/v1/summary", "", nil, &sum); code != 200 || sum.Delivered != 5 || sum.Failed != 0 {
		t.Errorf("after a restart: HTTP %d delivered_last_hour %d failed_last_hour %d, want 5 and 0", code, sum.Delivered, sum.Failed)
	}
}

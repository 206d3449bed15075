package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
)

// Drain consumers stay as many as the drains running (at most 64 per
// process), not as the endpoints drained within their inactivity threshold
// (a minute): 100 rate-limited endpoints, each with tasks left after every
// drain, never hold more than 64 drain consumers at once.
func TestDrainConsumersStayBoundedByRunningDrains(t *testing.T) {
	const endpoints, events, maxDrains = 100, 3, 64
	r := newReceiver(t, []string{secretA, secretB}, nil)
	var eps []endpointYAML
	for i := range endpoints {
		eps = append(eps, endpointYAML{ID: fmt.Sprintf("rl%d", i), URL: r.URL, Events: []string{"rl.*"}, Extra: "    rate_limit: {rps: 0.2, burst: 1}\n"})
	}
	h := startHookjet(t, testConfig(t, t.TempDir(), "", eps...), cli.Options{})
	for i := range events {
		h.publish("rl.created", fmt.Sprintf("rl_evt_%d", i), []byte(`{"n":1}`))
	}
	st, err := h.js.Stream(t.Context(), "HOOKJET_TASKS")
	if err != nil {
		t.Fatal(err)
	}
	drains := func() int {
		n := 0
		names := st.ConsumerNames(t.Context())
		for name := range names.Name() {
			if strings.HasPrefix(name, "drain-") {
				n++
			}
		}
		return n
	}
	peak := 0
	end := time.Now().Add(20 * time.Second)
	for time.Now().Before(end) && r.distinct() < events {
		peak = max(peak, drains())
		time.Sleep(200 * time.Millisecond)
	}
	for time.Now().Before(end) {
		peak = max(peak, drains())
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("requests %d (of %d owed); most drain consumers at once: %d", r.count(), endpoints*events, peak)
	if peak > maxDrains {
		t.Errorf("%d drain consumers at once for %d rate-limited endpoints: more than the %d drains a process runs", peak, endpoints, maxDrains)
	}
	if r.count() <= endpoints {
		t.Errorf("only %d requests: the parked tasks were never drained", r.count())
	}
}

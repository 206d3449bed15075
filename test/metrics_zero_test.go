package test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/cli"
)

// An endpoint's attempt counters exist at 0 from the start, before (or
// without) any delivery, so that rate() and alerts over them see 0 after a
// restart instead of a missing series.
func TestAttemptCountersExistAtZeroFromTheStart(t *testing.T) {
	rcv := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "crm", URL: rcv.URL}), cli.Options{})
	resp, err := http.Get("http://" + h.srv.AdminAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, series := range []string{
		`hookjet_attempts_total{class="success",endpoint="crm"} 0`,
		`hookjet_attempts_total{class="transient",endpoint="crm"} 0`,
		`hookjet_first_attempts_total{class="success",endpoint="crm"} 0`,
		`hookjet_dead_letters_total{endpoint="crm",reason="exhausted"} 0`,
		`hookjet_deferrals_total{cause="breaker",endpoint="crm"} 0`,
	} {
		if !strings.Contains(string(raw), series) {
			t.Errorf("/metrics before any delivery lacks %s", series)
		}
	}
}

package test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// `hookjet serve` is killed with SIGKILL while its drain holds an endpoint's
// waiting deliveries in flight, and started again. Those deliveries go
// again within 5 s of the restart (not after an HTTP-timeout-sized ack
// wait); while they wait, the endpoint's status says why instead of "they go
// at once"; and the start-up log says the previous run did not stop
// cleanly.
func TestRestartAfterSIGKILLResumesHeldTasks(t *testing.T) {
	const n, maxInFlight = 10, 4
	var hang atomic.Bool
	hang.Store(true)
	release := make(chan struct{})
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		if hang.Load() {
			<-release // the process is killed meanwhile
		}
		w.WriteHeader(http.StatusNoContent)
	})
	dir := t.TempDir()
	natsAddr, adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfgPath := writeConfig(t, dir, natsAddr, adminAddr, r.URL, fmt.Sprintf("  max_in_flight: %d\n", maxInFlight))
	p := startBinary(t, cfgPath, adminAddr)
	post := func(path string) {
		resp, err := http.Post("http://"+adminAddr+path, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d", path, resp.StatusCode)
		}
	}
	// Disabled first, so every event waits as a task; enabled, the drain
	// takes max_in_flight of them to a receiver that does not answer.
	post("/api/v1/endpoints/sink/disable")
	nc, js := connectJS(t, "nats://"+natsAddr)
	ids := eventIDs("evt_held", n)
	for _, id := range ids {
		m := nats.NewMsg("hookjet.events.order.created")
		m.Header.Set("Nats-Msg-Id", id)
		m.Data = []byte(`{"n":1}`)
		if _, err := js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	checkFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if tasks, err := tasksOf(t, js, "sink"); err != nil || len(tasks) != n {
			return fmt.Errorf("tasks: %d of %d: %w", len(tasks), n, err)
		}
		return nil
	})
	nc.Close()
	post("/api/v1/endpoints/sink/enable")
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if got := r.count(); got < maxInFlight {
			return fmt.Errorf("%d requests in flight", got)
		}
		return nil
	})
	time.Sleep(2 * jetstreamHeartbeatGap) // held past a keep-alive or two
	held := map[string]bool{}
	for _, d := range r.deliveries() {
		held[d.ID] = true
	}
	_ = p.signal(t, syscall.SIGKILL)
	hang.Store(false)
	close(release)
	p2 := startBinary(t, cfgPath, adminAddr)
	restarted := time.Now()

	// While they wait, the status says so.
	var show struct {
		Waiting []struct {
			Reason string `json:"reason"`
		} `json:"waiting"`
	}
	resp, err := http.Get("http://" + adminAddr + "/api/v1/endpoints/sink")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&show)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	shown := time.Now()

	resumed := map[string]time.Time{}
	checkFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		for _, d := range r.deliveries() {
			if held[d.ID] && d.Attempt == 2 {
				resumed[d.ID] = d.At
			}
		}
		if len(resumed) < len(held) {
			return fmt.Errorf("%d of the %d deliveries in flight at the kill went again", len(resumed), len(held))
		}
		return nil
	})
	waitAllDelivered(t, r, ids, 30*time.Second)
	var last time.Time
	for _, at := range resumed {
		if at.After(last) {
			last = at
		}
	}
	t.Logf("%d deliveries in flight at the kill; after the restart the last of them went after %s; status at +%s: %+v",
		len(held), last.Sub(restarted).Round(time.Millisecond), shown.Sub(restarted).Round(time.Millisecond), show.Waiting)
	if last.Sub(restarted) > 5*time.Second {
		t.Errorf("the deliveries in flight at the kill went again %s after the restart, want within 5s", last.Sub(restarted).Round(time.Millisecond))
	}
	if last.After(shown) {
		said := false
		for _, w := range show.Waiting {
			// taken: NATS has not given them back yet; in_flight_full:
			// it has, and they are on their way (the receiver notes their
			// arrival a few ms later than the status was read).
			said = said || w.Reason == "taken" || w.Reason == "in_flight_full"
		}
		if !said {
			t.Errorf("while %d deliveries waited for NATS to give them back, the endpoint's status said %+v", len(held), show.Waiting)
		}
	}
	out := p2.out.String()
	if !strings.Contains(out, "did not stop cleanly") {
		t.Errorf("the start-up log does not say the previous run did not stop cleanly:\n%s", out)
	}
	if err := p2.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	p3 := startBinary(t, cfgPath, adminAddr)
	if strings.Contains(p3.out.String(), "did not stop cleanly") {
		t.Errorf("after a clean stop the start-up log says the previous run did not stop cleanly")
	}
}

// jetstreamHeartbeatGap is longer than the drain's keep-alive interval.
const jetstreamHeartbeatGap = 1500 * time.Millisecond

// `hookjet serve` is killed with SIGKILL while an endpoint's deliveries
// wait as scheduled retries (retry.base 1s, cap 2s, the endpoint answering
// 503), and started again once the endpoint answers 200. Every retry was
// due within the cap of the kill, so all of them go within 5 s of the
// restart (docs/architecture.md: a restarted process resumes within about
// 5 s), not at the next 10 s rescan; and until then the endpoint's status
// says why they wait.
func TestRestartAfterSIGKILLDeliversScheduledRetries(t *testing.T) {
	const n = 20
	var failing atomic.Bool
	failing.Store(true)
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		if failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	dir := t.TempDir()
	natsAddr, adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf(`data_dir: %s
nats:
  listen: %s
admin:
  listen: %s
log:
  format: json
security:
  allow_private_networks: true
defaults:
  timeout: 2s
  retry: {base: 1s, cap: 2s, max_attempts: 50, max_age: 1h}
  breaker: {failure_threshold: 10000}
endpoints:
  - id: sink
    url: %s
    secrets: [%s, %s]
`, filepath.Join(dir, "data"), natsAddr, adminAddr, r.URL, secretA, secretB)
	cfgPath := filepath.Join(dir, "hookjet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, cfgPath, adminAddr)
	_, js := connectJS(t, "nats://"+natsAddr)
	ids := eventIDs("evt_retry", n)
	for _, id := range ids {
		m := nats.NewMsg("hookjet.events.order.created")
		m.Header.Set("Nats-Msg-Id", id)
		m.Data = []byte(`{"n":1}`)
		if _, err := js.PublishMsg(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	// Every event failed twice: its retries are stored schedules.
	checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		for _, id := range ids {
			if got := r.requestsFor(id); got < 2 {
				return fmt.Errorf("%s: %d requests", id, got)
			}
		}
		return nil
	})
	_ = p.signal(t, syscall.SIGKILL)
	killed := time.Now()
	failing.Store(false)
	before := r.count()

	p2 := startBinary(t, cfgPath, adminAddr)
	ready := time.Now()
	var show struct {
		Pending uint64 `json:"pending"`
		Waiting []struct {
			Reason string `json:"reason"`
		} `json:"waiting"`
	}
	resp, err := http.Get("http://" + adminAddr + "/api/v1/endpoints/sink")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&show)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	shown := time.Now()
	firstAfter := func() time.Time {
		var first time.Time
		for _, d := range r.deliveries()[before:] {
			if first.IsZero() || d.At.Before(first) {
				first = d.At
			}
		}
		return first
	}
	checkFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		got := map[string]bool{}
		for _, d := range r.deliveries()[before:] {
			got[d.ID] = true
		}
		if len(got) < n {
			return fmt.Errorf("%d of %d events delivered after the restart", len(got), n)
		}
		return nil
	})
	var last time.Time
	for _, d := range r.deliveries()[before:] {
		if d.At.After(last) {
			last = d.At
		}
	}
	first := firstAfter()
	t.Logf("killed; ready %s later; after ready the first retry went at +%s, the last at +%s; status at +%s: pending %d, waiting %+v",
		ready.Sub(killed).Round(time.Millisecond), first.Sub(ready).Round(time.Millisecond), last.Sub(ready).Round(time.Millisecond),
		shown.Sub(ready).Round(time.Millisecond), show.Pending, show.Waiting)
	if last.Sub(ready) > 5*time.Second {
		t.Errorf("the retries stored before the kill went up to %s after the restart was ready, want within 5s", last.Sub(ready).Round(time.Millisecond))
	}
	if first.After(shown) {
		said := false
		for _, w := range show.Waiting {
			said = said || w.Reason == "retry_scheduled"
		}
		if !said {
			t.Errorf("while %d retries waited after the restart, the endpoint's status said %+v", show.Pending, show.Waiting)
		}
	}
	if err := p2.signal(t, syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
}

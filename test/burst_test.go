package test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// countingReceiver verifies every request's signatures and counts distinct
// webhook-ids, keeping no bodies: a burst of hundreds of thousands of
// deliveries stays small in memory.
type countingReceiver struct {
	*httptest.Server
	check *receiver // its verify, secrets and t
	mu    sync.Mutex
	seen  map[string]struct{}
	n     atomic.Int64 // distinct ids
	bad   atomic.Int64 // requests whose signatures did not verify
}

func newCountingReceiver(t *testing.T) *countingReceiver {
	r := &countingReceiver{check: &receiver{t: t, secrets: []string{secretA, secretB}}, seen: map[string]struct{}{}}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		if err := r.check.verify(req.Header, body); err != nil {
			if r.bad.Add(1) == 1 {
				t.Errorf("receiver: %v", err)
			}
		}
		id := req.Header.Get("webhook-id")
		r.mu.Lock()
		if _, ok := r.seen[id]; !ok {
			r.seen[id] = struct{}{}
			r.n.Add(1)
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(r.Close)
	return r
}

// burstConfig writes a config with one endpoint per receiver (e0, e1, ...),
// each taking every event, on free loopback ports; extra goes at the top
// level, epExtra under each endpoint.
func burstConfig(t *testing.T, rs []*countingReceiver, extra, epExtra string) (cfgPath, natsAddr, adminAddr string) {
	t.Helper()
	dir := t.TempDir()
	natsAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	adminAddr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var eps strings.Builder
	for i, r := range rs {
		fmt.Fprintf(&eps, "  - id: e%d\n    url: %s\n    secrets: [%s, %s]\n%s", i, r.URL, secretA, secretB, epExtra)
	}
	cfg := fmt.Sprintf(`data_dir: %s
nats:
  listen: %s
  sync: 2m
admin:
  listen: %s
log:
  format: json
  level: warn
security:
  allow_private_networks: true
%sendpoints:
%s`, filepath.Join(dir, "data"), natsAddr, adminAddr, extra, eps.String())
	cfgPath = filepath.Join(dir, "hookjet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return cfgPath, natsAddr, adminAddr
}

// publishBurst publishes n events at once (asynchronous publishes with
// Nats-Msg-Id), waiting for every PubAck.
func publishBurst(t *testing.T, natsAddr string, n int) {
	t.Helper()
	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncMaxPending(4096))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"order":"burst","amount":1234,"currency":"EUR"}`)
	for i := range n {
		if _, err := js.PublishAsync("hookjet.events.order.created", body, natsjs.WithMsgID(fmt.Sprintf("burst_%d", i)), natsjs.WithStallWait(30*time.Second)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		t.Fatalf("PubAcks still missing after 2m: %d", js.PublishAsyncPending())
	}
}

// watchGaps samples the receivers' distinct counts every 100 ms until all
// want deliveries arrived or timeout passed, and reports every stretch of
// more than a second without a new delivery while some were missing.
func watchGaps(t *testing.T, rs []*countingReceiver, want int64, timeout time.Duration) (gaps []string, got int64) {
	t.Helper()
	total := func() int64 {
		var n int64
		for _, r := range rs {
			n += r.n.Load()
		}
		return n
	}
	start := time.Now()
	last, lastAt := total(), time.Now()
	var gapFrom time.Time
	for time.Since(start) < timeout {
		time.Sleep(100 * time.Millisecond)
		n := total()
		now := time.Now()
		if n != last {
			if !gapFrom.IsZero() {
				gaps = append(gaps, fmt.Sprintf("%v without a delivery at %d of %d (from +%v)", now.Sub(lastAt).Round(100*time.Millisecond), last, want, gapFrom.Sub(start).Round(100*time.Millisecond)))
				gapFrom = time.Time{}
			}
			last, lastAt = n, now
		} else if now.Sub(lastAt) > time.Second && gapFrom.IsZero() {
			gapFrom = lastAt
		}
		if n >= want {
			return gaps, n
		}
	}
	if !gapFrom.IsZero() {
		gaps = append(gaps, fmt.Sprintf("%v without a delivery at %d of %d until the end (from +%v)", time.Since(lastAt).Round(100*time.Millisecond), last, want, gapFrom.Sub(start).Round(100*time.Millisecond)))
	}
	return gaps, total()
}

// A burst published at once is fanned out without pauses: while events are
// unprocessed the fan-out keeps a pull at the server, so deliveries never stop
// for more than a second until every one has arrived.
func TestBinaryBurstHasNoGaps(t *testing.T) {
	const endpoints, events = 10, 30_000
	var rs []*countingReceiver
	for range endpoints {
		rs = append(rs, newCountingReceiver(t))
	}
	cfgPath, natsAddr, adminAddr := burstConfig(t, rs, "", "")
	proc := startBinary(t, cfgPath, adminAddr)
	publishBurst(t, natsAddr, events)
	gaps, got := watchGaps(t, rs, endpoints*events, 3*time.Minute)
	for _, l := range strings.Split(proc.out.String(), "\n") {
		if strings.Contains(l, "consume") {
			t.Log(l)
		}
	}
	t.Logf("delivered %d of %d", got, endpoints*events)
	for _, g := range gaps {
		t.Errorf("the fan-out stalled: %s", g)
	}
	if got != endpoints*events {
		t.Errorf("delivered %d of %d", got, endpoints*events)
	}
}

// max_backlog bounds what a failing endpoint holds, not a healthy one's
// burst: 20 times max_backlog published at once to one endpoint that answers
// 204 are all delivered and none is dead-lettered as overflow, although most
// of them wait for an in-flight slot.
func TestBinaryBurstPastMaxBacklogIsDelivered(t *testing.T) {
	const events = 20_000
	rs := []*countingReceiver{newCountingReceiver(t)}
	cfgPath, natsAddr, adminAddr := burstConfig(t, rs, "", "    max_backlog: 1000\n")
	startBinary(t, cfgPath, adminAddr)
	publishBurst(t, natsAddr, events)
	_, got := watchGaps(t, rs, events, 3*time.Minute)
	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(t.Context(), "HOOKJET_DLQ")
	if err != nil {
		t.Fatal(err)
	}
	dead := st.CachedInfo().State.Msgs
	t.Logf("delivered %d of %d; dead letters %d", got, events, dead)
	if dead != 0 {
		t.Errorf("%d deliveries to an endpoint answering 204 were dead-lettered (max_backlog 1000)", dead)
	}
	if got != events {
		t.Errorf("delivered %d of %d", got, events)
	}
}

package test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
)

// Per-key ordering, from outside: 200 keys x 20 events to an endpoint with
// ordering: key while one key's requests answer 500 for a while. Each key's
// events are first delivered in publish order, and no event of a key is
// even attempted before the previous one of that key was answered 2xx (a
// request may repeat after a crash, never overtake).

const (
	orderKeys   = 200
	orderPerKey = 20
	orderFailed = "k0"
)

// keyedScript answers 500 to the failing key's requests until failUntil,
// 204 to the rest, and notes when each event was first answered 2xx.
type keyedScript struct {
	mu        sync.Mutex
	failUntil time.Time
	ok        map[string]time.Time // event id -> first 2xx
}

func newKeyedScript(fail time.Duration) *keyedScript {
	return &keyedScript{failUntil: time.Now().Add(fail), ok: map[string]time.Time{}}
}

func (s *keyedScript) serve(w http.ResponseWriter, d delivery) {
	key, _, _ := strings.Cut(d.ID, "-")
	s.mu.Lock()
	fail := key == orderFailed && time.Now().Before(s.failUntil)
	if !fail {
		if _, seen := s.ok[d.ID]; !seen {
			s.ok[d.ID] = d.At
		}
	}
	s.mu.Unlock()
	if fail {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// missing lists up to n of ids not delivered yet.
func (s *keyedScript) missing(ids []string, n int) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range ids {
		if _, ok := s.ok[id]; !ok && len(out) < n {
			out = append(out, id)
		}
	}
	return out
}

func (s *keyedScript) delivered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ok)
}

// keyedIDs are the events' ids in publish order: round robin over the
// keys, so every key's events are spread over the whole run.
func keyedIDs() []string {
	var out []string
	for i := range orderPerKey {
		for k := range orderKeys {
			out = append(out, fmt.Sprintf("k%d-%d", k, i))
		}
	}
	return out
}

// publishKeyed publishes ids in order, each with the key before its "-",
// from one connection (asynchronously, so JetStream stores them in that
// order), and waits for every PubAck.
func publishKeyed(t testing.TB, js natsjs.JetStream, ids []string) {
	t.Helper()
	var acks []natsjs.PubAckFuture
	for _, id := range ids {
		key, _, _ := strings.Cut(id, "-")
		m := nats.NewMsg("hookjet.events.customer.updated")
		m.Header.Set("Nats-Msg-Id", id)
		m.Header.Set("Hookjet-Ordering-Key", key)
		m.Data = []byte(`{"id":"` + id + `"}`)
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			t.Fatal(err)
		}
		acks = append(acks, f)
	}
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			t.Fatalf("publish %s: %v", f.Msg().Header.Get("Nats-Msg-Id"), err)
		case <-time.After(30 * time.Second):
			t.Fatal("no PubAck within 30s")
		}
	}
}

// checkKeyOrder fails when an event of a key was requested before the
// previous event of that key had been answered 2xx, or first delivered out
// of publish order. It returns the other keys' p99 latency from publish
// (started) to first 2xx, for the log.
func checkKeyOrder(t *testing.T, r *receiver, s *keyedScript, started time.Time, per int) time.Duration {
	t.Helper()
	firstReq := map[string]time.Time{}
	for _, d := range r.deliveries() {
		if _, ok := firstReq[d.ID]; !ok {
			firstReq[d.ID] = d.At
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	bad := 0
	var lat []time.Duration
	for k := range orderKeys {
		for i := 1; i < per; i++ {
			prev, cur := fmt.Sprintf("k%d-%d", k, i-1), fmt.Sprintf("k%d-%d", k, i)
			if !firstReq[cur].After(s.ok[prev]) || !s.ok[cur].After(s.ok[prev]) {
				if bad++; bad <= 5 {
					t.Errorf("%s first requested at %s, first delivered at %s; %s first delivered at %s", cur,
						firstReq[cur].Format(time.StampMicro), s.ok[cur].Format(time.StampMicro), prev, s.ok[prev].Format(time.StampMicro))
				}
			}
		}
		if k > 0 {
			for i := range per {
				lat = append(lat, s.ok[fmt.Sprintf("k%d-%d", k, i)].Sub(started))
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d events of a key went before the previous one was delivered", bad)
	}
	slices.Sort(lat)
	return lat[len(lat)*99/100]
}

func TestBinaryOrderedKeysWithAFailingKeyAndSIGKILL(t *testing.T) {
	s := newKeyedScript(10 * time.Second)
	r := newReceiver(t, []string{secretA, secretB}, s.serve)
	dir := t.TempDir()
	natsAddr, adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfgPath := writeConfig(t, dir, natsAddr, adminAddr, r.URL, "  ordering: key\n")
	p := startBinary(t, cfgPath, adminAddr)
	nc, js := connectJS(t, "nats://"+natsAddr)
	defer nc.Close()
	ids := keyedIDs()
	started := time.Now()
	publishKeyed(t, js, ids)
	checkFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if n := s.delivered(); n < len(ids)/3 {
			return fmt.Errorf("%d of %d delivered", n, len(ids))
		}
		return nil
	})
	_ = p.signal(t, syscall.SIGKILL)
	killed := s.delivered()
	startBinary(t, cfgPath, adminAddr)
	checkFor(t, 90*time.Second, 50*time.Millisecond, func() error {
		if n := s.delivered(); n < len(ids) {
			return fmt.Errorf("%d of %d delivered; not yet %v", n, len(ids), s.missing(ids, 5))
		}
		return nil
	})
	p99 := checkKeyOrder(t, r, s, started, orderPerKey)
	t.Logf("%d events of %d keys, key %s failing for 10s, killed with SIGKILL after %d deliveries: all delivered in %s, %d requests (%d repeats), other keys' p99 from publish %s",
		len(ids), orderKeys, orderFailed, killed, time.Since(started).Round(time.Millisecond), r.count(), r.count()-r.distinct(), p99.Round(time.Millisecond))
}

// Three hookjet processes on a 3-node R3 cluster share the fan-out, so a
// key's entries reach the ordered lane from several processes at once; one
// process delivers the lane.
func TestClusterThreeProcessesKeepKeyOrder(t *testing.T) {
	nodes := startCluster(t)
	s := newKeyedScript(5 * time.Second)
	r := newReceiver(t, []string{secretA, secretB}, s.serve)
	for range 3 {
		cfg := testConfig(t, t.TempDir(), "streams:\n  replicas: 3\n", endpointYAML{ID: "sink", URL: r.URL,
			Extra: "    ordering: key\n    retry: {base: 50ms, cap: 500ms, max_attempts: 100, max_age: 1h}\n"})
		cfg.NATS.URL = clusterURL(nodes)
		startHookjet(t, cfg, cli.Options{})
	}
	nc, js := connectJS(t, clusterURL(nodes))
	defer nc.Close()
	ids := keyedIDs()[:orderKeys*10]
	started := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	publishKeyed(t, js, ids)
	checkFor(t, 90*time.Second, 50*time.Millisecond, func() error {
		if n := s.delivered(); n < len(ids) {
			return fmt.Errorf("%d of %d delivered; missing %v", n, len(ids), s.missing(ids, 5))
		}
		return ctx.Err()
	})
	p99 := checkKeyOrder(t, r, s, started, 10)
	t.Logf("%d events over 3 processes: all delivered in %s, %d requests, other keys' p99 from publish %s",
		len(ids), time.Since(started).Round(time.Millisecond), r.count(), p99.Round(time.Millisecond))
}

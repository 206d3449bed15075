package test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hookjet/hookjet/internal/rabbittest"
	"github.com/hookjet/hookjet/webhook"
)

// binaryWith writes a config with top-level YAML top and the endpoints
// YAML eps (a list under endpoints:), starts the built binary on it and
// returns it with a JetStream publisher to its NATS server and its admin
// address.
func binaryWith(t *testing.T, top, eps string) (*process, natsjs.JetStream, string) {
	t.Helper()
	dir := t.TempDir()
	natsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf(`data_dir: %s
nats:
  listen: %s
admin:
  listen: %s
  token: %s
log:
  format: json
security:
  allow_private_networks: true
worker:
  shutdown_grace: 5s
defaults:
  timeout: 2s
  retry: {base: 50ms, cap: 500ms, max_attempts: 200, max_age: 1h}
  breaker: {cooldown: 1s, max_cooldown: 2s}
%sendpoints:
%s`, filepath.Join(dir, "data"), natsAddr, adminAddr, consoleToken, top, eps)
	path := filepath.Join(dir, "hookjet.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startBinary(t, path, adminAddr)
	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return p, js, adminAddr
}

// publishN publishes events evt_<from> .. evt_<to-1> of type order.created.
func publishN(t *testing.T, js natsjs.JetStream, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := js.Publish(t.Context(), "hookjet.events.order.created", fmt.Appendf(nil, `{"i":%d}`, i), natsjs.WithMsgID(fmt.Sprintf("evt_%d", i))); err != nil {
			t.Fatal(err)
		}
	}
}

// transientAttempts is hookjet_attempts_total{endpoint,class="transient"}.
func transientAttempts(t *testing.T, adminAddr, endpoint string) float64 {
	t.Helper()
	text := metricsOf(t, adminAddr)
	want := fmt.Sprintf(`hookjet_attempts_total{class="transient",endpoint=%q} `, endpoint)
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(line, want); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return 0
}

func metricsOf(t *testing.T, adminAddr string) string {
	t.Helper()
	var text string
	checkFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		req, err := http.NewRequest(http.MethodGet, "http://"+adminAddr+"/metrics", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+consoleToken)
		resp, err := offAPI.Do(req)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return fmt.Errorf("metrics: HTTP %d", resp.StatusCode)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		text = string(b)
		return err
	})
	return text
}

// startNATSAt starts a nats-server with JetStream on port, storing in dir:
// the second server, started again on the same port and data after a
// shutdown.
func startNATSAt(t *testing.T, port int, dir string) *natsserver.Server {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: port, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("second nats-server not ready")
	}
	return ns
}

// A broker that goes down while events are published loses none of them:
// hookjet's attempts fail as transient while it is down, and once it is
// back every event is delivered once, signed. The broker is stopped while
// no attempt is in flight, so that no acknowledgement is lost on the way
// and once means exactly once.
func TestBinaryBrokerDownAndBackLosesNothing(t *testing.T) {
	const before, during = 10, 20
	verifier, err := webhook.NewVerifier([]string{secretA})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("nats", func(t *testing.T) {
		port, dir := freePort(t), t.TempDir()
		ns := startNATSAt(t, port, dir)
		defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
		url := fmt.Sprintf("nats://127.0.0.1:%d", port)
		count := func() (uint64, error) {
			nc, err := nats.Connect(url)
			if err != nil {
				return 0, err
			}
			defer nc.Close()
			js, _ := natsjs.New(nc)
			s, err := js.CreateOrUpdateStream(t.Context(), natsjs.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}})
			if err != nil {
				return 0, err
			}
			info, err := s.Info(t.Context())
			if err != nil {
				return 0, err
			}
			return info.State.Msgs, nil
		}
		if _, err := count(); err != nil { // creates the stream
			t.Fatal(err)
		}
		_, js, admin := binaryWith(t, "", fmt.Sprintf("  - id: to-nats\n    events: [\"order.*\"]\n    secrets: [%s]\n    destination: {type: nats, url: %q, subject: \"out.{type}\"}\n", secretA, url))
		publishN(t, js, 0, before)
		waitCount(t, "the stream", before, count)

		ns.Shutdown()
		ns.WaitForShutdown()
		publishN(t, js, before, before+during)
		checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
			if n := transientAttempts(t, admin, "to-nats"); n == 0 {
				return fmt.Errorf("no transient attempt yet while the server is down")
			}
			return nil
		})
		ns = startNATSAt(t, port, dir)
		waitCount(t, "the stream", before+during, count)

		nc, err := nats.Connect(url)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		js2, _ := natsjs.New(nc)
		s, err := js2.Stream(t.Context(), "OUT")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for seq := uint64(1); seq <= before+during; seq++ {
			m, err := s.GetMsg(t.Context(), seq)
			if err != nil {
				t.Fatal(err)
			}
			if err := verifier.VerifyMessage(m.Header, m.Data); err != nil {
				t.Errorf("message %d: signature: %v", seq, err)
			}
			seen[m.Header.Get("webhook-id")]++
		}
		checkOnce(t, seen, before+during)
	})
	t.Run("rabbitmq", func(t *testing.T) {
		node := rabbittest.Start(t)
		conn, err := amqp.Dial(node.URL())
		if err != nil {
			t.Fatal(err)
		}
		ch, err := conn.Channel()
		if err == nil {
			err = ch.ExchangeDeclare("hooks", "topic", true, false, false, false, nil)
		}
		if err == nil {
			_, err = ch.QueueDeclare("orders", true, false, false, false, nil)
		}
		if err == nil {
			err = ch.QueueBind("orders", "order.#", "hooks", false, nil)
		}
		_ = conn.Close()
		if err != nil {
			t.Fatal(err)
		}
		count := func() (uint64, error) {
			conn, err := amqp.Dial(node.URL())
			if err != nil {
				return 0, err
			}
			defer func() { _ = conn.Close() }()
			ch, err := conn.Channel()
			if err != nil {
				return 0, err
			}
			q, err := ch.QueueDeclarePassive("orders", true, false, false, false, nil)
			return uint64(q.Messages), err
		}
		_, js, admin := binaryWith(t, "", fmt.Sprintf("  - id: to-rabbit\n    events: [\"order.*\"]\n    secrets: [%s]\n    destination: {type: rabbitmq, url: %q, exchange: hooks, routing_key: \"{type}\"}\n", secretA, node.URL()))
		publishN(t, js, 0, before)
		waitCount(t, "the queue", before, count)

		if err := node.Kill(); err != nil {
			t.Fatal(err)
		}
		publishN(t, js, before, before+during)
		checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
			if n := transientAttempts(t, admin, "to-rabbit"); n == 0 {
				return fmt.Errorf("no transient attempt yet while the node is down")
			}
			return nil
		})
		if err := node.Restart(); err != nil {
			t.Fatal(err)
		}
		waitCount(t, "the queue", before+during, count)

		conn, err = amqp.Dial(node.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = conn.Close() }()
		ch, err = conn.Channel()
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]int{}
		for range before + during {
			d, ok, err := ch.Get("orders", true)
			if err != nil || !ok {
				t.Fatalf("get: %v (ok %v)", err, ok)
			}
			h := map[string][]string{}
			for k, v := range d.Headers {
				s, _ := v.(string)
				h[k] = []string{s}
			}
			if err := verifier.VerifyMessage(h, d.Body); err != nil {
				t.Errorf("message %s: signature: %v", d.MessageId, err)
			}
			seen[h["webhook-id"][0]]++
		}
		checkOnce(t, seen, before+during)
	})
}

// waitCount waits until count says want, and fails if it ever says more.
func waitCount(t *testing.T, what string, want uint64, count func() (uint64, error)) {
	t.Helper()
	checkFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		n, err := count()
		if err != nil {
			return err
		}
		if n > want {
			t.Fatalf("%s holds %d messages, want %d: a duplicate", what, n, want)
		}
		if n != want {
			return fmt.Errorf("%s holds %d of %d", what, n, want)
		}
		return nil
	})
}

// checkOnce fails unless seen holds evt_0 .. evt_<n-1>, each once.
func checkOnce(t *testing.T, seen map[string]int, n int) {
	t.Helper()
	for i := range n {
		if c := seen[fmt.Sprintf("evt_%d", i)]; c != 1 {
			t.Errorf("evt_%d arrived %d times, want once", i, c)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct ids arrived, want %d: %v", len(seen), n, seen)
	}
}

// An endpoint of a tenant may use only the destination types
// portal.destinations lists (webhook alone by default): the admin API
// refuses a tenant's kafka endpoint naming destination.type until kafka is
// listed, and then the tenant's endpoint is delivered to.
func TestBinaryTenantDestinationTypesLimited(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "acme-orders"))
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	body := map[string]any{"id": "acme-kafka", "tenant": "acme", "events": []string{"order.*"},
		"destination": map[string]any{"type": "kafka", "brokers": kc.ListenAddrs(), "topic": "acme-orders"}}
	rabbit := map[string]any{"id": "acme-rabbit", "tenant": "acme", "events": []string{"order.*"},
		"destination": map[string]any{"type": "rabbitmq", "url": "amqp://guest:guest@127.0.0.1:1/", "exchange": "x"}}
	sink := newReceiver(t, []string{secretA}, nil)
	ops := fmt.Sprintf("  - id: ops\n    url: %s\n    secrets: [%s]\n    events: [\"order.*\"]\n", sink.URL, secretA)

	_, _, admin := binaryWith(t, "", ops)
	var refused struct {
		Field string `json:"field"`
		Error string `json:"error"`
	}
	if code := adminCall(t, admin, "POST", "/api/v1/endpoints", consoleToken, body, &refused); code != 400 || refused.Field != "destination.type" || !strings.Contains(refused.Error, "portal.destinations") {
		t.Fatalf("a tenant's kafka endpoint with portal.destinations unset: HTTP %d %+v, want 400 naming destination.type", code, refused)
	}

	// The strict guard would refuse kfake's loopback address.
	_, js, admin := binaryWith(t, "portal:\n  destinations: [webhook, kafka]\n  allow_private_networks: true\n", ops)
	if code := adminCall(t, admin, "POST", "/api/v1/endpoints", consoleToken, rabbit, &refused); code != 400 || refused.Field != "destination.type" {
		t.Fatalf("a tenant's rabbitmq endpoint with portal.destinations [webhook, kafka]: HTTP %d %+v, want 400 naming destination.type", code, refused)
	}
	if code := adminCall(t, admin, "POST", "/api/v1/endpoints", consoleToken, body, nil); code != 201 {
		t.Fatalf("a tenant's kafka endpoint with kafka listed: HTTP %d, want 201", code)
	}
	time.Sleep(2500 * time.Millisecond) // applied everywhere within 2 s
	msg := &nats.Msg{Subject: "hookjet.events.order.created", Data: []byte(`{"n":1}`), Header: nats.Header{"Hookjet-Tenant": []string{"acme"}}}
	if _, err := js.PublishMsg(t.Context(), msg, natsjs.WithMsgID("acme-1")); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ConsumeTopics("acme-orders"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) == 0 && ctx.Err() == nil {
		recs = append(recs, cl.PollFetches(ctx).Records()...)
	}
	if len(recs) != 1 || string(recs[0].Key) != "acme-1" {
		t.Fatalf("the tenant's kafka endpoint got %d records, want acme-1 once", len(recs))
	}
}

// A transform that never returns is interrupted after transform_timeout
// and its deliveries dead-lettered as transform, without an attempt, while
// another endpoint of the same events gets every one; a script that throws
// is dead-lettered with its message and line:column.
func TestBinaryTransformLoopAndThrowDeadLettered(t *testing.T) {
	const events = 20
	sink := newReceiver(t, []string{secretA}, nil)
	eps := fmt.Sprintf(`  - id: fine
    url: %[1]s
    secrets: [%[2]s]
    events: ["order.*"]
  - id: loop
    url: %[1]s
    secrets: [%[2]s]
    events: ["order.*"]
    transform: "function handler(webhook) { while (true) {} }"
  - id: throws
    url: %[1]s
    secrets: [%[2]s]
    events: ["order.*"]
    transform: |
      function handler(webhook) {
        var amount = webhook.payload.i;
        throw new Error("no amount " + amount);
      }
`, sink.URL, secretA)
	_, js, admin := binaryWith(t, "", eps)
	publishN(t, js, 0, events)
	checkFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if n := sink.distinct(); n != events {
			return fmt.Errorf("fine got %d of %d", n, events)
		}
		return nil
	})
	dead := func(endpoint string) []dlqEntry {
		var out struct {
			Entries []dlqEntry `json:"entries"`
		}
		if code := adminCall(t, admin, "GET", "/api/v1/dlq?endpoint="+endpoint+"&limit=100", consoleToken, nil, &out); code != 200 {
			t.Fatalf("dlq: HTTP %d", code)
		}
		return out.Entries
	}
	for _, tc := range []struct{ endpoint, wantErr string }{
		{"loop", "transform: "},
		{"throws", "transform: 3:"},
	} {
		var entries []dlqEntry
		checkFor(t, 60*time.Second, 100*time.Millisecond, func() error {
			if entries = dead(tc.endpoint); len(entries) != events {
				return fmt.Errorf("%s: %d of %d dead letters", tc.endpoint, len(entries), events)
			}
			return nil
		})
		for _, e := range entries {
			if e.Reason != "transform" || e.Attempts != 0 || !strings.HasPrefix(e.LastError, tc.wantErr) {
				t.Errorf("%s: dead letter %+v, want reason transform, no attempt, error starting %q", tc.endpoint, e, tc.wantErr)
			}
		}
		if tc.endpoint == "loop" && !strings.Contains(entries[0].LastError, "interrupted after 50ms") {
			t.Errorf("loop: error %q does not say the run timed out", entries[0].LastError)
		}
		if tc.endpoint == "throws" && !strings.Contains(entries[0].LastError, "no amount") {
			t.Errorf("throws: error %q lacks the script's message", entries[0].LastError)
		}
	}
	if n := sink.count(); n != events {
		t.Errorf("the receiver got %d requests, want %d (fine's only: loop and throws send none)", n, events)
	}
}

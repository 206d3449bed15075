package test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	hjs "github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/outbox"
	"github.com/hookjet/hookjet/outbox/pgtest"
)

// outboxDB starts a throw-away PostgreSQL with the outbox table.
func outboxDB(t testing.TB) *pgtest.Server {
	t.Helper()
	pg := pgtest.Start(t)
	ddl, err := outbox.Schema(config.DefaultOutboxTable)
	if err != nil {
		t.Fatal(err)
	}
	pg.Exec(t, ddl)
	return pg
}

// insertRows inserts n rows "<prefix>-000001".. of type order.created in one
// transaction and returns their ids.
func insertRows(t testing.TB, pg *pgtest.Server, prefix string, n int) []string {
	t.Helper()
	pg.Exec(t, `INSERT INTO hookjet_outbox (id, event_type, payload)
		SELECT $1 || '-' || lpad(i::text, 6, '0'), 'order.created', convert_to('{"n":' || i || '}', 'UTF8')
		FROM generate_series(1, $2::int) AS i`, prefix, n)
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%06d", prefix, i+1)
	}
	return ids
}

// relayCfg is the outbox section used by the tests.
func relayCfg(pg *pgtest.Server) config.Outbox {
	o := config.Default().Outbox
	o.DSN = config.NewSecret(pg.DSN())
	o.Poll = 200 * time.Millisecond
	return o
}

// testRelay is an in-process relay with its own NATS connection and registry.
type testRelay struct {
	*outbox.Relay
	reg *prometheus.Registry
}

func startRelay(t testing.TB, pg *pgtest.Server, natsURL string, name string, opts ...outbox.Option) *testRelay {
	t.Helper()
	nc, err := nats.Connect(natsURL, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	pub, err := hjs.NewOutboxPublisher(nc, 1000, int(hjs.MaxMsgSize(&config.Config{Security: config.Default().Security})))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	log := slog.New(slog.NewTextHandler(tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo})).With("relay", name)
	r, err := outbox.New(relayCfg(pg), 1<<20, pub, append([]outbox.Option{outbox.WithLogger(log), outbox.WithRegisterer(reg)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := r.Run(ctx); err != nil {
			t.Errorf("relay %s: %v", name, err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		nc.Close()
	})
	return &testRelay{Relay: r, reg: reg}
}

// counter reads a counter of the relay's registry.
func (r *testRelay) counter(t testing.TB, name string) float64 {
	t.Helper()
	mfs, err := r.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return metricValue(mf.GetMetric()[0])
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func metricValue(m *dto.Metric) float64 {
	if m.GetCounter() != nil {
		return m.GetCounter().GetValue()
	}
	return m.GetGauge().GetValue()
}

// outboxHookjet runs hookjet (embedded NATS unless natsURL is set) with one
// endpoint "sink" delivering to a new receiver.
func outboxHookjet(t testing.TB, natsURL string) (*hookjet, *receiver, string) {
	t.Helper()
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL})
	cfg.NATS.URL = natsURL
	h := startHookjet(t, cfg, cli.Options{})
	if natsURL == "" {
		natsURL = "nats://" + cfg.NATS.Listen
	}
	return h, r, natsURL
}

// exactlyOnce inserts a marker row, waits for it (so that anything still in
// flight has arrived) and checks that every id arrived exactly once.
func exactlyOnce(t testing.TB, pg *pgtest.Server, r *receiver, ids []string) {
	t.Helper()
	marker := insertRows(t, pg, fmt.Sprintf("zz-marker-%d", time.Now().UnixNano()), 1)
	waitAllDelivered(t, r, marker, 30*time.Second)
	all := append(append([]string(nil), ids...), marker...)
	if n, some := missing(r, all); n > 0 {
		t.Fatalf("%d events lost, e.g. %v", n, some)
	}
	want := make(map[string]bool, len(all))
	for _, id := range all {
		want[id] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, n := range r.perID {
		switch {
		case n != 1:
			t.Errorf("event %s delivered %d times", id, n)
		case !want[id] && !strings.HasPrefix(id, "zz-marker"):
			t.Errorf("unexpected event %s delivered", id)
		}
	}
}

func tableEmpty(t testing.TB, pg *pgtest.Server, timeout time.Duration) {
	t.Helper()
	checkFor(t, timeout, 20*time.Millisecond, func() error {
		if n := pg.Count(t, "SELECT count(*) FROM hookjet_outbox"); n > 0 {
			return fmt.Errorf("%d rows left in the outbox", n)
		}
		return nil
	})
}

// 10,000 rows committed in ten transactions while the relay runs are each
// delivered exactly once; a rolled-back row never is; bad rows are
// dead-lettered as rejected without holding back the rows after them.
func TestOutbox10000RowsDeliveredOnce(t *testing.T) {
	pg := outboxDB(t)
	h, r, url := outboxHookjet(t, "")
	relay := startRelay(t, pg, url, "a")

	// A transaction that rolls back: its row must never be delivered.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := outbox.Insert(ctx, tx, "order.created", "rolled-back", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	// Bad rows sort first (id order): they must not block the rest.
	pg.Exec(t, `INSERT INTO hookjet_outbox (id, event_type, payload, headers) VALUES
		('0-bad-type', 'order.*', '\x7b7d', NULL),
		('0-bad-size', 'order.created', decode(repeat('78', 1048577), 'hex'), NULL),
		('0-bad-size-2m', 'order.created', decode(repeat('78', 2097152), 'hex'), NULL),
		('0-bad-header', 'order.created', '\x7b7d', '{"Nats-Msg-Id": "other"}')`)

	start := time.Now()
	var ids []string
	for i := range 10 {
		ids = append(ids, insertRows(t, pg, fmt.Sprintf("e%d", i), 1000)...)
	}
	tableEmpty(t, pg, 60*time.Second)
	relayed := time.Since(start)
	waitAllDelivered(t, r, ids, 60*time.Second)
	t.Logf("10,000 rows: relayed (table empty) in %s = %.0f rows/s; all delivered after %s",
		relayed.Round(time.Millisecond), 10000/relayed.Seconds(), time.Since(start).Round(time.Millisecond))
	exactlyOnce(t, pg, r, ids)
	if n := r.requestsFor("rolled-back"); n != 0 {
		t.Fatalf("rolled-back row delivered %d times", n)
	}

	dead := map[string]dlqEntry{}
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		for _, e := range h.dlq("?endpoint=" + config.OutboxDLQEndpoint) {
			dead[e.EventID] = e
		}
		if len(dead) != 4 {
			return fmt.Errorf("dead letters %v, want the 4 bad rows", dead)
		}
		return nil
	})
	for id, want := range map[string]string{"0-bad-type": "event_type", "0-bad-size": "max_payload_bytes", "0-bad-size-2m": "not kept", "0-bad-header": "Nats-Msg-Id"} {
		e := dead[id]
		if e.Reason != "rejected" || e.Endpoint != config.OutboxDLQEndpoint || !strings.Contains(e.LastError, want) {
			t.Errorf("dead letter %s = %+v, want reason rejected and an error about %s", id, e, want)
		}
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error { // counted after the commit
		if got := relay.counter(t, "hookjet_outbox_relayed_total"); got != 10001 {
			return fmt.Errorf("hookjet_outbox_relayed_total = %v, want 10001", got)
		}
		return nil
	})
	if got := relay.counter(t, "hookjet_outbox_rejected_total"); got != 4 {
		t.Errorf("hookjet_outbox_rejected_total = %v, want 4", got)
	}
	checkFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		if lag := relay.Lag(); lag != 0 {
			return fmt.Errorf("lag %s with an empty table", lag)
		}
		return relay.Ready()
	})
}

// Two relays on one table split the rows between them; no event is
// delivered twice.
func TestOutboxTwoRelaysSplitRows(t *testing.T) {
	pg := outboxDB(t)
	_, r, url := outboxHookjet(t, "")
	ids := insertRows(t, pg, "split", 6000)
	a := startRelay(t, pg, url, "a")
	b := startRelay(t, pg, url, "b")
	waitAllDelivered(t, r, ids, 60*time.Second)
	exactlyOnce(t, pg, r, ids)
	// A relay counts a row once its transaction has committed, which can
	// be a moment after the receiver got the event.
	var na, nb float64
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		na, nb = a.counter(t, "hookjet_outbox_relayed_total"), b.counter(t, "hookjet_outbox_relayed_total")
		if na+nb < 6001 {
			return fmt.Errorf("relays counted %v + %v rows, want 6001 in all", na, nb)
		}
		return nil
	})
	t.Logf("relay a published %v rows, relay b %v", na, nb)
	if na == 0 || nb == 0 || na+nb != 6001 {
		t.Fatalf("relays published %v + %v rows, want both > 0 and 6001 in all", na, nb)
	}
	if d := a.counter(t, "hookjet_outbox_duplicates_total") + b.counter(t, "hookjet_outbox_duplicates_total"); d != 0 {
		t.Fatalf("%v rows were published twice", d)
	}
}

// PostgreSQL crashes (pg_ctl stop -m immediate) in the middle of a run and
// comes back: the relay says so, reconnects, and nothing is lost or
// delivered twice.
func TestOutboxPostgresRestart(t *testing.T) {
	pg := outboxDB(t)
	_, r, url := outboxHookjet(t, "")
	ids := insertRows(t, pg, "pgr", 8000)
	relay := startRelay(t, pg, url, "a")
	checkFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		if r.distinct() < 500 {
			return errors.New("waiting for the first deliveries")
		}
		return nil
	})
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	atCrash := r.distinct()
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if err := relay.Ready(); !errors.Is(err, outbox.ErrPostgres) {
			return fmt.Errorf("Ready() = %w, want ErrPostgres", err)
		}
		return nil
	})
	t.Logf("postgresql stopped after %d of %d deliveries; Ready: %v", atCrash, len(ids), relay.Ready())
	if atCrash >= len(ids) {
		t.Fatal("every row was relayed before the crash: the test proves nothing")
	}
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	waitAllDelivered(t, r, ids, 60*time.Second)
	exactlyOnce(t, pg, r, ids)
	if err := relay.Ready(); err != nil {
		t.Fatalf("Ready() after recovery = %v", err)
	}
}

// A relay inside `hookjet serve` (outbox.dsn set) shows its lag in the
// summary and its PostgreSQL connection in /readyz.
func TestOutboxInServeReportsLagAndReadiness(t *testing.T) {
	pg := outboxDB(t)
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL})
	cfg.Outbox = relayCfg(pg)
	h := startHookjet(t, cfg, cli.Options{})
	token := cfg.Admin.Token.Reveal()
	ids := insertRows(t, pg, "srv", 50)
	waitAllDelivered(t, r, ids, 30*time.Second)
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		var sum struct {
			Lag *float64 `json:"outbox_lag_seconds"`
		}
		if code := h.api("GET", "/api/v1/summary", token, nil, &sum); code != 200 {
			return fmt.Errorf("summary: HTTP %d", code)
		}
		if sum.Lag == nil || *sum.Lag != 0 {
			return fmt.Errorf("outbox_lag_seconds = %v, want 0 once the table is empty", sum.Lag)
		}
		return nil
	})
	readyz := func() (int, string) {
		var body struct {
			Error string `json:"error"`
		}
		code := h.api("GET", "/readyz", "", nil, &body)
		return code, body.Error
	}
	if err := pg.Stop(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		if code, msg := readyz(); code != 503 || !strings.Contains(msg, "postgresql unavailable") {
			return fmt.Errorf("/readyz with PostgreSQL down: HTTP %d %q", code, msg)
		}
		return nil
	})
	if err := pg.Start(); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if code, msg := readyz(); code != 200 {
			return fmt.Errorf("/readyz after PostgreSQL is back: HTTP %d %q", code, msg)
		}
		return nil
	})
}

// The NATS server goes away in the middle of a run and comes back on the
// same port: the relay says so, keeps the rows it could not publish, and
// every event arrives.
func TestOutboxNATSRestart(t *testing.T) {
	pg := outboxDB(t)
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	_, r, url := outboxHookjet(t, ns.url())
	ids := insertRows(t, pg, "natsr", 8000)
	relay := startRelay(t, pg, url, "a")
	checkFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		if r.distinct() < 500 {
			return errors.New("waiting for the first deliveries")
		}
		return nil
	})
	ns.shutdown()
	atCrash := r.distinct()
	// Rows committed during the outage: the relay cannot publish them.
	ids = append(ids, insertRows(t, pg, "natsr-outage", 2000)...)
	checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if err := relay.Ready(); !errors.Is(err, outbox.ErrNATS) {
			return fmt.Errorf("Ready() = %w, want ErrNATS", err)
		}
		return nil
	})
	t.Logf("nats-server stopped after %d of %d deliveries; Ready: %v", atCrash, len(ids), relay.Ready())
	if atCrash >= len(ids) {
		t.Fatal("every row was relayed before the restart: the test proves nothing")
	}
	if left := pg.Count(t, "SELECT count(*) FROM hookjet_outbox"); left == 0 {
		t.Fatal("no rows waiting while NATS is down: the test proves nothing")
	}
	ns.start()
	waitAllDelivered(t, r, ids, 90*time.Second)
	marker := insertRows(t, pg, "zz-marker", 1)
	waitAllDelivered(t, r, marker, 30*time.Second)
	t.Logf("requests %d for %d events (%d duplicate requests, from hookjet's own redeliveries across the restart), duplicate PubAcks at the relay %v",
		r.count(), len(ids)+1, r.count()-r.distinct(), relay.counter(t, "hookjet_outbox_duplicates_total"))
	checkFor(t, 10*time.Second, 50*time.Millisecond, relay.Ready)
}

// The relay binary is killed with SIGKILL in the middle of a batch: nothing
// is lost, and rows it had published but not deleted are republished with
// their id and absorbed (no second delivery). Then rows whose events were
// already delivered are put back, as a crash between PubAck and commit
// leaves them: JetStream reports each as a duplicate and none is delivered
// again.
func TestOutboxKill9RelayBinary(t *testing.T) {
	pg := outboxDB(t)
	_, r, url := outboxHookjet(t, "")
	ids := insertRows(t, pg, "k9", 20000)

	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "outbox.yaml")
	yaml := fmt.Sprintf("nats:\n  url: %s\nlog:\n  format: json\noutbox:\n  dsn: env:TEST_OUTBOX_DSN\n  batch: 100\n", url)
	if err := os.WriteFile(cfgPath, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(hookjetBinary(t), "outbox", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "TEST_OUTBOX_DSN="+pg.DSN())
	out := &lockedWriter{w: &strings.Builder{}}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("relay output:\n%s", out.String())
		}
	})
	// Kill it once it has relayed a quarter of the rows, watched on one
	// connection so the check is quick.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	checkFor(t, 60*time.Second, time.Millisecond, func() error {
		var left int
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM hookjet_outbox").Scan(&left); err != nil {
			return err
		}
		if left > 15000 {
			return fmt.Errorf("%d rows left", left)
		}
		return nil
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-done
	left := pg.Count(t, "SELECT count(*) FROM hookjet_outbox")
	t.Logf("killed the relay after %d deliveries; %d rows left", r.distinct(), left)
	if left == 0 {
		t.Fatal("the relay finished before the kill: the test proves nothing")
	}
	if strings.Contains(out.String(), pg.DSN()) {
		t.Fatal("the relay logged its DSN")
	}

	relay := startRelay(t, pg, url, "after-kill")
	waitAllDelivered(t, r, ids, 90*time.Second)
	exactlyOnce(t, pg, r, ids)
	before := relay.counter(t, "hookjet_outbox_duplicates_total")
	t.Logf("republished rows the restarted relay found already stored: %v", before)

	// Rows put back after delivery, as a crash before the delete leaves them.
	pg.Exec(t, `INSERT INTO hookjet_outbox (id, event_type, payload)
		SELECT 'k9-' || lpad(i::text, 6, '0'), 'order.created', '\x7b7d' FROM generate_series(1, 100) AS i`)
	tableEmpty(t, pg, 30*time.Second)
	if got := relay.counter(t, "hookjet_outbox_duplicates_total") - before; got != 100 {
		t.Fatalf("%v republished rows reported as duplicates, want 100", got)
	}
	exactlyOnce(t, pg, r, ids)
}

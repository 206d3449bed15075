package test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/examples/inboundconsumer"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/outbox/pgtest"
	"github.com/hookjet/hookjet/webhook"
	"github.com/hookjet/hookjet/webhook/kvdedupe"
	"github.com/hookjet/hookjet/webhook/pgdedupe"
)

var errEffect = errors.New("effect failed")

// The KV store: a failing handler releases the id so the retry is
// processed; a success is remembered; a replica holding the id makes the
// others wait; a crashed replica's claim lapses after its lease.
func TestKVDedupeStore(t *testing.T) {
	ns := startNATSNode(t, "kv", standaloneNATS(t))
	_, js := connectJS(t, ns.url())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(ctx, kvdedupe.BucketConfig("PROCESSED", time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := webhook.NewDedupeMetrics(reg)
	replicaA := webhook.Counted(kvdedupe.New(kv, kvdedupe.WithLease(time.Second)), m, "kv")
	replicaB := webhook.Counted(kvdedupe.New(kv, kvdedupe.WithLease(time.Second)), m, "kv")
	var effects atomic.Int64
	effect := func(context.Context) error { effects.Add(1); return nil }
	fail := func(context.Context) error { return errEffect }

	if dup, err := replicaA.Once(ctx, "evt_1", fail); dup || !errors.Is(err, errEffect) {
		t.Fatalf("failing handler: dup=%v err=%v", dup, err)
	}
	if dup, err := replicaB.Once(ctx, "evt_1", effect); dup || err != nil || effects.Load() != 1 {
		t.Fatalf("retry on the other replica: dup=%v err=%v effects=%d", dup, err, effects.Load())
	}
	for _, r := range []webhook.Store{replicaA, replicaB} {
		if dup, err := r.Once(ctx, "evt_1", effect); !dup || err != nil {
			t.Fatalf("copy: dup=%v err=%v", dup, err)
		}
	}
	if effects.Load() != 1 {
		t.Fatalf("%d effects, want 1", effects.Load())
	}

	// A handler in progress on A: B must wait, not skip it.
	started, release := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := replicaA.Once(ctx, "evt_2", func(context.Context) error { close(started); <-release; return nil })
		done <- err
	}()
	<-started
	if dup, err := replicaB.Once(ctx, "evt_2", effect); dup || !errors.Is(err, webhook.ErrInProgress) {
		t.Fatalf("while A processes: dup=%v err=%v", dup, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if dup, _ := replicaB.Once(ctx, "evt_2", effect); !dup {
		t.Fatal("after A processed evt_2, B does not see a duplicate")
	}

	// A replica that crashed after claiming: the claim lapses.
	if _, err := kv.Create(ctx, kvdedupe.Key("evt_3"), []byte("pending"), natsjs.KeyTTL(time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := replicaA.Once(ctx, "evt_3", effect); !errors.Is(err, webhook.ErrInProgress) {
		t.Fatalf("claimed by a crashed replica: %v", err)
	}
	checkFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		_, err := replicaB.Once(ctx, "evt_3", effect)
		return err
	})
	if effects.Load() != 2 {
		t.Errorf("%d effects, want 2 (evt_1, evt_3; evt_2 was A's own handler)", effects.Load())
	}
	for outcome, atLeast := range map[string]float64{"processed": 3, "duplicate": 3, "failed": 1, "in_progress": 2} {
		if got := counterValue(t, reg, "hookjet_webhook_dedupe_total", map[string]string{"store": "kv", "outcome": outcome}); got < atLeast || (outcome != "in_progress" && got != atLeast) {
			t.Errorf("hookjet_webhook_dedupe_total{outcome=%q} = %v, want %v", outcome, got, atLeast)
		}
	}
}

// The PostgreSQL store: the mark and the effect commit together; a failing
// handler keeps neither; a concurrent copy waits for the first and is a
// duplicate once it committed.
func TestPGDedupeStore(t *testing.T) {
	pg := pgtest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pg.Exec(t, pgdedupe.Schema(""))
	pg.Exec(t, "CREATE TABLE charges (event_id text, amount int)")
	conns := make([]*pgx.Conn, 2)
	for i := range conns {
		c, err := pgx.Connect(ctx, pg.DSN())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(context.Background())
		conns[i] = c
	}
	stores := make([]*pgdedupe.Store, 2)
	for i, c := range conns {
		s, err := pgdedupe.New(c, "")
		if err != nil {
			t.Fatal(err)
		}
		stores[i] = s
	}
	charge := func(id string, fail bool) func(context.Context, pgx.Tx) error {
		return func(ctx context.Context, tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO charges VALUES ($1, 42)", id); err != nil {
				return err
			}
			if fail {
				return errEffect
			}
			return nil
		}
	}
	if dup, err := stores[0].Process(ctx, "evt_1", charge("evt_1", true)); dup || !errors.Is(err, errEffect) {
		t.Fatalf("failing handler: dup=%v err=%v", dup, err)
	}
	if n := pg.Count(t, "SELECT count(*) FROM charges") + pg.Count(t, "SELECT count(*) FROM "+pgdedupe.DefaultTable); n != 0 {
		t.Fatalf("a failed handler left %d rows", n)
	}
	if dup, err := stores[1].Process(ctx, "evt_1", charge("evt_1", false)); dup || err != nil {
		t.Fatalf("retry: dup=%v err=%v", dup, err)
	}
	if dup, err := stores[0].Process(ctx, "evt_1", charge("evt_1", false)); !dup || err != nil {
		t.Fatalf("copy: dup=%v err=%v", dup, err)
	}

	// Concurrent copies: the second waits for the first's transaction.
	for _, firstFails := range []bool{false, true} {
		id := fmt.Sprintf("evt_concurrent_%v", firstFails)
		inTx, release := make(chan struct{}), make(chan struct{})
		first := make(chan error, 1)
		go func() {
			_, err := stores[0].Process(ctx, id, func(ctx context.Context, tx pgx.Tx) error {
				if err := charge(id, false)(ctx, tx); err != nil {
					return err
				}
				close(inTx)
				<-release
				if firstFails {
					return errEffect
				}
				return nil
			})
			first <- err
		}()
		<-inTx
		second := make(chan bool, 1)
		go func() {
			dup, err := stores[1].Process(ctx, id, charge(id, false))
			if err != nil {
				t.Errorf("second copy: %v", err)
			}
			second <- dup
		}()
		close(release)
		if err := <-first; (err != nil) != firstFails {
			t.Fatalf("first: %v", err)
		}
		if dup := <-second; dup == firstFails {
			t.Errorf("first fails=%v: second copy duplicate=%v", firstFails, dup)
		}
		if n := pg.Count(t, "SELECT count(*) FROM charges WHERE event_id = $1", id); n != 1 {
			t.Errorf("first fails=%v: %d charges, want 1", firstFails, n)
		}
	}
	// Once finds its transaction in the context.
	if dup, err := stores[0].Once(ctx, "evt_once", func(ctx context.Context) error {
		tx, ok := pgdedupe.Tx(ctx)
		if !ok {
			return errors.New("no transaction in the context")
		}
		return charge("evt_once", false)(ctx, tx)
	}); dup || err != nil {
		t.Fatalf("Once: dup=%v err=%v", dup, err)
	}
	if n, err := stores[0].Expire(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("Expire(1h) = %d, %v; want nothing that recent", n, err)
	}
	if n, err := stores[0].Expire(ctx, 0); err != nil || n != 4 {
		t.Errorf("Expire(0) = %d, %v; want the 4 ids", n, err)
	}
}

// The example consumer reads HOOKJET_INBOUND with a durable consumer and the
// KV store: events whose effect fails once are retried and take effect
// once; provider duplicates and copies stored twice take effect once.
func TestInboundConsumerExample(t *testing.T) {
	g := startGateway(t, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex
	attempts, effects := map[string]int{}, map[string]int{}
	c, err := inboundconsumer.Start(ctx, g.js, inboundconsumer.Options{
		Durable: "billing", Filter: jetstream.InboundPrefix + "stripe.>", RetryDelay: 50 * time.Millisecond,
		Handle: func(_ context.Context, ev inboundconsumer.Event) error {
			mu.Lock()
			defer mu.Unlock()
			attempts[ev.ID]++
			if attempts[ev.ID] == 1 {
				return errEffect // every event fails once
			}
			if !strings.Contains(string(ev.Body), ev.ID) || ev.Source != "stripe" || ev.ReceivedAt.IsZero() {
				return fmt.Errorf("event %+v", ev)
			}
			effects[ev.ID]++
			return nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	src := g.source("stripe")
	var ids []string
	for i := range 5 {
		id := fmt.Sprintf("evt_c%d", i)
		ids = append(ids, id)
		for range 2 { // the provider sends it twice
			if code, _ := g.signed(src, "", "", body(id, "charge.succeeded"), time.Now()); code != 200 {
				t.Fatalf("POST %s: %d", id, code)
			}
		}
	}
	// A copy stored again under another message id (a second gateway
	// cluster, a replay): the consumer's store still sees it as done.
	msgs := g.stored("stripe")
	cm := &nats.Msg{Subject: msgs[0].Subject, Header: nats.Header{}, Data: msgs[0].Data}
	for k, v := range msgs[0].Header {
		cm.Header[k] = v
	}
	cm.Header.Set(jetstream.HdrMsgID, "replayed-copy")
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		mu.Lock()
		defer mu.Unlock()
		if effects[ids[0]] != 1 {
			return fmt.Errorf("%s has %d effects", ids[0], effects[ids[0]])
		}
		return nil
	})
	if _, err := g.js.PublishMsg(ctx, cm); err != nil {
		t.Fatal(err)
	}
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		info, err := g.js.Consumer(ctx, jetstream.InboundStream, "billing")
		if err != nil {
			return err
		}
		ci, err := info.Info(ctx)
		if err != nil {
			return err
		}
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			return fmt.Errorf("consumer: %d pending, %d unacked", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if effects[id] != 1 || attempts[id] != 2 {
			t.Errorf("%s: %d effects after %d attempts, want 1 after 2", id, effects[id], attempts[id])
		}
	}
}

// counterValue is the value of counter name with labels in reg, or -1.
func counterValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return -1
}

package test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hookjet/hookjet/outbox"
)

// Rows relayed per second with outbox.batch 500: each iteration commits
// 10,000 rows in one transaction and times from the commit until the relay
// has deleted them all (every PubAck received). Deliveries run concurrently,
// as in production.
//
//	go test -run '^$' -bench Outbox -benchtime 5x ./test
func BenchmarkOutboxRelay(b *testing.B) {
	const rows = 10000
	pg := outboxDB(b)
	_, _, url := outboxHookjet(b, "")
	startRelay(b, pg, url, "bench")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	i := 0
	for b.Loop() {
		b.StopTimer()
		tx, err := conn.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO hookjet_outbox (id, event_type, payload)
			SELECT $1 || '-' || i, 'order.created', '\x7b7d' FROM generate_series(1, $2::int) AS i`, fmt.Sprintf("bench%d", i), rows); err != nil {
			b.Fatal(err)
		}
		i++
		b.StartTimer()
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
		for left := rows; left > 0; {
			if err := conn.QueryRow(ctx, "SELECT count(*) FROM hookjet_outbox").Scan(&left); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(rows*i)/b.Elapsed().Seconds(), "rows/s")
}

// Latency from commit to delivery at the receiver, one row per transaction
// at 500 rows/s for 5 s, woken by LISTEN/NOTIFY.
func BenchmarkOutboxCommitToDelivery(b *testing.B) {
	pg := outboxDB(b)
	_, r, url := outboxHookjet(b, "")
	startRelay(b, pg, url, "bench")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	committed := map[string]time.Time{}
	var ids []string
	for b.Loop() {
		tick := time.NewTicker(2 * time.Millisecond)
		for n := range 2500 {
			<-tick.C
			id := fmt.Sprintf("lat-%d-%d", len(ids), n)
			tx, err := conn.Begin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if err := outbox.Insert(ctx, tx, "order.created", id, []byte(`{}`)); err != nil {
				b.Fatal(err)
			}
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
			committed[id] = time.Now()
			ids = append(ids, id)
		}
		tick.Stop()
	}
	waitAllDelivered(b, r, ids, time.Minute)
	var lat []time.Duration
	for _, d := range r.deliveries() {
		if at, ok := committed[d.ID]; ok && d.Attempt == 1 {
			lat = append(lat, d.At.Sub(at))
		}
	}
	slices.Sort(lat)
	q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
	b.ReportMetric(q(0.5), "p50-ms")
	b.ReportMetric(q(0.99), "p99-ms")
	b.ReportMetric(q(1), "max-ms")
}

package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/config"
)

// startLog starts a server, ensures HOOKJET_LOG with max bytes, and returns
// a writer and a reader on it.
func startLog(t testing.TB, maxBytes int64) (*LogWriter, *LogReader, natsjs.JetStream) {
	t.Helper()
	js := startJS(t)
	cfg := config.Default()
	cfg.Log.MaxBytes = maxBytes
	if err := EnsureLog(context.Background(), js, &cfg, nil); err != nil {
		t.Fatal(err)
	}
	w, err := NewLogWriter(js.Conn(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	x, err := FollowLog(js, filepath.Join(t.TempDir(), "log-index.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(x.Close)
	return w, NewLogReader(js.Conn(), js, x), js
}

// waitStored waits until the writer has settled n records.
func waitStored(t testing.TB, w *LogWriter, n uint64) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for w.Written()+w.Lost() < n {
		if time.Now().After(deadline) {
			t.Fatalf("writer settled %d+%d of %d records", w.Written(), w.Lost(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if w.Lost() != 0 {
		t.Fatalf("writer lost %d records", w.Lost())
	}
}

func rec(ep, id string, n int, class string) attempt.Record {
	return attempt.Record{EventID: id, EventType: "order.created", Endpoint: ep, Tenant: "t-" + ep, Attempt: n,
		Trigger: attempt.TriggerDelivery, StartedAt: time.Now(), Status: 200, Class: class}
}

// TestLogQueries stores the records of three endpoints, ids with dots,
// spaces and wildcards, and reads them back by event, by endpoint page by
// page (newest first), with a filter and a time range.
func TestLogQueries(t *testing.T) {
	w, r, _ := startLog(t, 64<<20)
	ctx := context.Background()
	eps := []string{"a", "b", "c"}
	var n uint64
	want := map[string][]string{} // endpoint -> event ids in write order
	for i := range 300 {
		id := fmt.Sprintf("evt.%d with space *>", i)
		ep := eps[i%3]
		w.Record(rec(ep, id, 1, attempt.ClassTransient))
		w.Record(rec(ep, id, 2, attempt.ClassSuccess))
		n += 2
		want[ep] = append(want[ep], id)
		if i%10 == 0 { // an event for two endpoints
			w.Record(rec("c", id, 1, attempt.ClassPermanent))
			w.Record(rec("c", id, 1, attempt.ClassDeadLetter))
			n += 2
		}
	}
	waitStored(t, w, n)

	got, err := r.EventRecords(ctx, "evt.30 with space *>")
	if err != nil {
		t.Fatal(err)
	}
	var desc []string
	for _, g := range got {
		desc = append(desc, g.Endpoint+"/"+strconv.Itoa(g.Attempt)+"/"+g.Class)
	}
	if wantDesc := []string{"a/1/transient", "a/2/success", "c/1/permanent", "c/1/dead_letter"}; !slices.Equal(desc, wantDesc) {
		t.Errorf("EventRecords = %v, want %v", desc, wantDesc)
	}
	if got, _ := r.EventRecords(ctx, "evt.30 with space"); len(got) != 0 {
		t.Errorf("a prefix of an id found %d records", len(got))
	}

	// Endpoint b, pages of 7: every record once, newest first.
	var seqs []uint64
	var before uint64
	for pages := 0; ; pages++ {
		page, next, err := r.Page(ctx, LogQuery{Endpoint: "b", Limit: 7, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			if p.Endpoint != "b" {
				t.Fatalf("page holds %s's record", p.Endpoint)
			}
			seqs = append(seqs, p.Seq)
		}
		if next == 0 {
			break
		}
		if pages > 100 {
			t.Fatal("paging does not end")
		}
		before = next
	}
	if len(seqs) != 2*len(want["b"]) {
		t.Errorf("pages hold %d records of b, want %d", len(seqs), 2*len(want["b"]))
	}
	if !sort.SliceIsSorted(seqs, func(i, j int) bool { return seqs[i] > seqs[j] }) || len(slices.Compact(slices.Clone(seqs))) != len(seqs) {
		t.Errorf("pages are not newest first without repeats: %v", seqs)
	}

	// A filter over every endpoint.
	page, _, err := r.Page(ctx, LogQuery{Limit: 1000, Match: func(r *attempt.Record) bool { return r.Class == attempt.ClassDeadLetter }})
	if err != nil {
		t.Fatal(err)
	}
	if len(page) != 30 {
		t.Errorf("dead_letter records = %d, want 30", len(page))
	}

	// Until before everything: nothing.
	page, _, err = r.Page(ctx, LogQuery{Endpoint: "a", Until: time.Now().Add(-time.Hour)})
	if err != nil || len(page) != 0 {
		t.Errorf("until an hour ago: %d records, %v", len(page), err)
	}

	// Export of a's records, oldest first.
	var exported int
	var last uint64
	err = r.Export(ctx, LogQuery{Endpoint: "a"}, func(r *attempt.Record) error {
		if r.Endpoint != "a" || r.Seq <= last {
			return fmt.Errorf("export gave %s's record %d after %d", r.Endpoint, r.Seq, last)
		}
		last = r.Seq
		exported++
		return nil
	})
	if err != nil || exported != 2*len(want["a"]) {
		t.Errorf("export: %d records of a, want %d (%v)", exported, 2*len(want["a"]), err)
	}
}

// TestLogRetentionByBytes fills a 1 MiB log with several times that: the
// server drops the oldest records, the newest are there, and no record is
// refused.
func TestLogRetentionByBytes(t *testing.T) {
	w, r, js := startLog(t, 1<<20)
	const total = 20000
	for i := range total {
		w.Record(rec("dead", "evt_"+strconv.Itoa(i), 1, attempt.ClassTransient))
		if (i+1)%5000 == 0 { // within the writer's queue
			waitStored(t, w, uint64(i+1))
		}
	}
	st, err := js.Stream(context.Background(), LogStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Bytes > 1<<20 || info.State.LastSeq != total || info.State.FirstSeq <= 1 {
		t.Fatalf("log state: %d bytes, seqs %d..%d; want <= 1 MiB ending at %d with the oldest dropped", info.State.Bytes, info.State.FirstSeq, info.State.LastSeq, total)
	}
	if got, err := r.EventRecords(context.Background(), "evt_"+strconv.Itoa(total-1)); err != nil || len(got) != 1 {
		t.Errorf("newest record: %d found, %v", len(got), err)
	}
	if got, err := r.EventRecords(context.Background(), "evt_0"); err != nil || len(got) != 0 {
		t.Errorf("oldest record: %d found, %v; want it dropped", len(got), err)
	}
}

// BenchmarkLogLookups stores HOOKJET_LOG_BENCH_RECORDS records (default
// 200,000; the target is measured at 10,000,000) for 10 endpoints, then
// measures an event's lookup, a page of 100 of one endpoint's attempts at
// random depths, and an export. It reports p99s in ms and export records/s.
// HOOKJET_LOG_BENCH_OLDER=1 stores them as records written before
// deliveries were named.
//
//	HOOKJET_LOG_BENCH_RECORDS=10000000 go test -run '^$' -bench BenchmarkLogLookups -benchtime 200x -timeout 60m ./jetstream
func BenchmarkLogLookups(b *testing.B) {
	total := 200000
	if v := os.Getenv("HOOKJET_LOG_BENCH_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		total = n
	}
	w, r, js := startLog(b, 16<<30)
	// HOOKJET_LOG_BENCH_OLDER=1 writes records without a delivery, as
	// before records named theirs: every lookup then reads their subjects
	// in full as well.
	older := "1"
	if os.Getenv("HOOKJET_LOG_BENCH_OLDER") != "" {
		older = ""
	}
	start := time.Now()
	for i := range total {
		// Each event: 1 attempt; every 10th one has a retry as well.
		id := "evt_" + strconv.Itoa(i/2)
		w.Record(attempt.Record{EventID: id, EventType: "order.created", Endpoint: "ep" + strconv.Itoa(i%10), Tenant: "acme",
			Attempt: 1 + i%2, Trigger: attempt.TriggerDelivery, Delivery: older, StartedAt: time.Now(), DurationMS: 1.2, Status: 200, Class: attempt.ClassSuccess})
		for w.Written()+w.Lost()+logQueue/2 < uint64(i) {
			time.Sleep(time.Millisecond) // keep the queue from dropping records
		}
	}
	for w.Written()+w.Lost() < uint64(total) {
		time.Sleep(10 * time.Millisecond)
	}
	fill := time.Since(start)
	if lost := w.Lost(); lost > 0 {
		b.Logf("the writer lost %d of %d records while filling (counted, as in production)", lost, total)
	}
	st, _ := js.Stream(context.Background(), LogStream)
	info, _ := st.Info(context.Background())
	b.Logf("stored %d records (%d MB) in %s (%.0f/s)", info.State.Msgs, info.State.Bytes>>20, fill.Round(time.Second), float64(total)/fill.Seconds())

	ctx := context.Background()
	var lookups, pages []time.Duration
	i := 0
	for b.Loop() {
		i++
		id := "evt_" + strconv.Itoa((i*7919)%(total/2))
		t0 := time.Now()
		got, err := r.EventRecords(ctx, id)
		lookups = append(lookups, time.Since(t0))
		if err != nil || len(got) == 0 || len(got) > 2 {
			b.Fatalf("event %s: %d records, %v", id, len(got), err)
		}
		before := uint64(1 + (i*104729)%total)
		t0 = time.Now()
		page, _, err := r.Page(ctx, LogQuery{Endpoint: "ep" + strconv.Itoa(i%10), Limit: 100, Before: before})
		pages = append(pages, time.Since(t0))
		if err != nil || (len(page) != 100 && before > 2000) {
			b.Fatalf("page before %d: %d records, %v", before, len(page), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(p99ms(lookups), "lookup-p99-ms")
	b.ReportMetric(p99ms(pages), "page100-p99-ms")
	n, t0 := 0, time.Now()
	if err := r.Export(ctx, LogQuery{}, func(*attempt.Record) error { n++; return nil }); err != nil {
		b.Fatal(err)
	}
	rate := float64(n) / time.Since(t0).Seconds()
	b.ReportMetric(rate, "export-records/s")
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	b.Logf("%d records: event lookup p50 %.2f ms p99 %.2f ms; page of 100 p50 %.2f ms p99 %.2f ms; export %.0f records/s; heap in use (server and client) %d MB",
		info.State.Msgs, p50ms(lookups), p99ms(lookups), p50ms(pages), p99ms(pages), rate, ms.HeapInuse>>20)
	b.Logf("slowest lookups (iteration: ms): %s; slowest pages: %s", slowest(lookups), slowest(pages))
	if uint64(n) != info.State.Msgs {
		b.Errorf("export: %d records, want %d", n, info.State.Msgs)
	}
}

// slowest lists the five slowest of d with their iteration.
func slowest(d []time.Duration) string {
	idx := make([]int, len(d))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return int(d[b] - d[a]) })
	var out []string
	for _, i := range idx[:min(5, len(idx))] {
		out = append(out, fmt.Sprintf("%d: %.1f", i, float64(d[i])/float64(time.Millisecond)))
	}
	return strings.Join(out, ", ")
}

func p50ms(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[len(s)/2]) / float64(time.Millisecond)
}

func p99ms(d []time.Duration) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[(len(s)*99)/100]) / float64(time.Millisecond)
}

// TestLogWriterNeverBlocks records with NATS gone: Record returns at once
// and every record is counted as lost.
func TestLogWriterNeverBlocks(t *testing.T) {
	ns, err := StartEmbedded(config.NATS{Listen: "127.0.0.1:-1"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.NoReconnect())
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewLogWriter(nc, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	const n = 3 * logQueue // more than the queue holds
	for i := range n {
		w.Record(rec("e", "evt_"+strconv.Itoa(i), 1, attempt.ClassSuccess))
	}
	deadline := time.Now().Add(30 * time.Second)
	for w.Lost() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if w.Lost() != n || w.Written() != 0 {
		t.Errorf("lost %d, written %d; want all %d lost", w.Lost(), w.Written(), n)
	}
}

// TestLogKeepsEveryDelivery stores an event's first delivery to crm (a
// success), a redelivery (a 400, dead-lettered) and a replay (a 503, then a
// success), its delivery to erp, and a test event: every record comes back,
// oldest first, grouped into deliveries whose state is their newest
// record's. Records of the layout before deliveries were named (a
// redelivery's attempt 1 on the first delivery's subject) all come back too.
func TestLogKeepsEveryDelivery(t *testing.T) {
	w, r, js := startLog(t, 64<<20)
	ctx := context.Background()
	const id = "evt.7 redelivered *"
	at := func(ep string, n int, trigger, delivery, class string, status int) attempt.Record {
		x := rec(ep, id, n, class)
		x.Trigger, x.Delivery, x.Status = trigger, delivery, status
		return x
	}
	records := []attempt.Record{
		at("crm", 1, attempt.TriggerDelivery, "17", attempt.ClassSuccess, 204),
		at("erp", 1, attempt.TriggerDelivery, "17", attempt.ClassSuccess, 200),
		at("crm", 1, attempt.TriggerRedeliver, "d17xk3", attempt.ClassPermanent, 400),
		at("crm", 1, attempt.TriggerRedeliver, "d17xk3", attempt.ClassDeadLetter, 400),
		at("crm", 1, attempt.TriggerReplay, "r9", attempt.ClassTransient, 503),
		at("crm", 2, attempt.TriggerReplay, "r9", attempt.ClassSuccess, 204),
	}
	test := rec("crm", "test_q1", 1, attempt.ClassSuccess)
	test.Trigger, test.Delivery = attempt.TriggerTest, "tq1"
	for _, x := range append(slices.Clone(records), test) {
		w.Record(x)
	}
	waitStored(t, w, uint64(len(records)+1))

	got, err := r.EventRecords(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	desc := func(recs []attempt.Record) []string {
		var out []string
		for _, g := range recs {
			out = append(out, fmt.Sprintf("%s/%d/%s/%s/%s/%d", g.Endpoint, g.Attempt, g.Trigger, g.Delivery, g.Class, g.Status))
		}
		return out
	}
	if d, want := desc(got), desc(records); !slices.Equal(d, want) {
		t.Errorf("EventRecords =\n %v\nwant\n %v", d, want)
	}
	deliveries := func(recs []attempt.Record) []string {
		var out []string
		for _, d := range attempt.Deliveries(recs) {
			out = append(out, fmt.Sprintf("%s#%d %s %s %d", d.Endpoint, d.Number, d.Trigger, d.State, len(d.Records)))
		}
		return out
	}
	want := []string{"crm#1 delivery delivered 1", "erp#1 delivery delivered 1", "crm#2 redeliver dead_letter 2", "crm#3 replay delivered 2"}
	if d := deliveries(got); !slices.Equal(d, want) {
		t.Errorf("Deliveries = %v, want %v", d, want)
	}
	got, err = r.EventRecords(ctx, "test_q1")
	if d := deliveries(got); err != nil || !slices.Equal(d, []string{"crm#1 test delivered 1"}) {
		t.Errorf("the test event's deliveries = %v (%v)", d, err)
	}

	// The older layout: no delivery, a redelivery's records on the first
	// delivery's subjects.
	const old = "evt-before-upgrade"
	for _, x := range []attempt.Record{
		rec("crm", old, 1, attempt.ClassSuccess),
		{EventID: old, Endpoint: "crm", Attempt: 1, Trigger: attempt.TriggerRedeliver, Class: attempt.ClassPermanent, Status: 400, StartedAt: time.Now()},
		{EventID: old, Endpoint: "crm", Attempt: 1, Trigger: attempt.TriggerRedeliver, Class: attempt.ClassDeadLetter, Status: 400, StartedAt: time.Now()},
	} {
		data, err := json.Marshal(x)
		if err != nil {
			t.Fatal(err)
		}
		k := "1"
		if x.Class == attempt.ClassDeadLetter {
			k = "d1"
		}
		if _, err := js.Publish(ctx, LogPrefix+"crm."+EventToken(old)+"."+k, data); err != nil {
			t.Fatal(err)
		}
	}
	got, err = r.EventRecords(ctx, old)
	if err != nil || len(got) != 3 {
		t.Fatalf("records of the older layout: %v (%v), want all 3", desc(got), err)
	}
	if d := deliveries(got); !slices.Equal(d, []string{"crm#1 delivery delivered 1", "crm#2 redeliver dead_letter 2"}) {
		t.Errorf("deliveries of the older layout = %v", d)
	}
}

// BenchmarkLogSharedSubject compares two ways of finding an event whose six
// records lie spread over HOOKJET_LOG_BENCH_RECORDS others (default
// 200,000): the process's index of the log and direct gets by sequence
// (what EventRecords does; it once measured a subject per record read with
// one multi-last get), and one subject per (endpoint, event) read with a
// batch get of that subject, which walks the blocks between its first and
// last message. It restarts the server after filling, so the first lookup of
// each ("cold") finds no block in the server's caches, as a lookup of an
// hours-old event does; the loop's lookups are warm.
//
//	HOOKJET_LOG_BENCH_RECORDS=1000000 go test -run '^$' -bench BenchmarkLogSharedSubject -benchtime 50x ./jetstream
func BenchmarkLogSharedSubject(b *testing.B) {
	total := 200000
	if v := os.Getenv("HOOKJET_LOG_BENCH_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatal(err)
		}
		total = n
	}
	dir := b.TempDir()
	start := func() (*nats.Conn, natsjs.JetStream, func()) {
		ns, err := StartEmbedded(config.NATS{Listen: "127.0.0.1:-1"}, dir)
		if err != nil {
			b.Fatal(err)
		}
		nc, err := nats.Connect(ns.ClientURL())
		if err != nil {
			b.Fatal(err)
		}
		js, err := natsjs.New(nc)
		if err != nil {
			b.Fatal(err)
		}
		return nc, js, func() { nc.Close(); ns.Shutdown(); ns.WaitForShutdown() }
	}
	nc, js, stop := start()
	cfg := config.Default()
	cfg.Log.MaxBytes = 16 << 30
	if err := EnsureLog(context.Background(), js, &cfg, nil); err != nil {
		b.Fatal(err)
	}
	w, err := NewLogWriter(nc, nil)
	if err != nil {
		b.Fatal(err)
	}
	const id, shared = "evt-spread", LogPrefix + "crm.shared"
	for i := range total {
		if i%(total/6) == total/12 {
			x := rec("crm", id, 1+i/(total/6), attempt.ClassTransient)
			x.Delivery = "1"
			w.Record(x)
			data, _ := json.Marshal(x)
			if _, err := js.PublishAsync(shared, data); err != nil {
				b.Fatal(err)
			}
		}
		w.Record(rec("ep"+strconv.Itoa(i%10), "filler_"+strconv.Itoa(i), 1, attempt.ClassSuccess))
		for w.Written()+w.Lost()+logQueue/2 < uint64(i) {
			time.Sleep(time.Millisecond)
		}
	}
	<-js.PublishAsyncComplete()
	waitStored(b, w, uint64(total+6))
	w.Close()
	stop()
	nc, js, stop = start()
	defer stop()
	x, err := FollowLog(js, filepath.Join(b.TempDir(), "log-index.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	for x.Applied() < uint64(total+12) { // the index built by a process that starts on a full log
		time.Sleep(10 * time.Millisecond)
	}
	r := NewLogReader(nc, js, x)
	ctx := context.Background()
	perRecord := func() time.Duration {
		t0 := time.Now()
		got, err := r.EventRecords(ctx, id)
		if err != nil || len(got) != 6 {
			b.Fatalf("index: %d records, %v", len(got), err)
		}
		return time.Since(t0)
	}
	sharedSubject := func() time.Duration {
		t0 := time.Now()
		msgs, err := r.getBatch(ctx, msgGetRequest{NextFor: shared, Batch: multiLastMax})
		if err != nil || len(msgs) != 6 {
			b.Fatalf("shared subject: %d records, %v", len(msgs), err)
		}
		return time.Since(t0)
	}
	coldUnique, coldShared := perRecord(), sharedSubject()
	var unique, one []time.Duration
	for b.Loop() {
		unique = append(unique, perRecord())
		one = append(one, sharedSubject())
	}
	b.ReportMetric(float64(coldUnique)/float64(time.Millisecond), "per-record-cold-ms")
	b.ReportMetric(float64(coldShared)/float64(time.Millisecond), "shared-cold-ms")
	b.Logf("%d records: the index cold %.2f ms, warm p50 %.2f ms p99 %.2f ms; one subject per (endpoint, event) cold %.2f ms, warm p50 %.2f ms p99 %.2f ms",
		total, float64(coldUnique)/float64(time.Millisecond), p50ms(unique), p99ms(unique), float64(coldShared)/float64(time.Millisecond), p50ms(one), p99ms(one))
}

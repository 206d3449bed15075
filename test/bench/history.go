package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/state"
)

// history10m measures what months of history cost the NATS server: the
// delivery log's records (HOOKJET_LOG) and the remembered ids (HOOKJET_SEEN),
// -history-records of each (default 10 million), written through hookjet's
// own writers (jetstream.LogWriter, jetstream.SeenIDs) to a nats-server
// running alone in a child process (this binary with natsChildEnv set; the
// embedded server of hookjet, nothing else in that process). The child's Go
// heap (runtime.ReadMemStats after two GCs, HeapAlloc: live bytes) is read
// on an empty server, after each fill, and after a restart of the server on
// the same store, each after the server's block caches have expired; the
// heap per record is the difference over the records. Then a process that
// starts on the full log indexes it (jetstream.LogIndex) and an event's
// records and pages of 100 of an endpoint's attempts at random depths are
// looked up.
const natsChildEnv = "HOOKJET_BENCH_NATS"

// historyStats is what history10m measures.
type historyStats struct {
	Records             int          `json:"records"`
	LogWriteSeconds     float64      `json:"log_write_seconds"`
	LogBytes            uint64       `json:"log_bytes"`
	SeenWriteSeconds    float64      `json:"seen_write_seconds"`
	SeenBytes           uint64       `json:"seen_bytes"`
	SeenApplySeconds    float64      `json:"seen_apply_seconds"` // the ids followed into a process's ledger
	HeapEmptyMB         float64      `json:"heap_empty_mb"`
	LogHeapPerRecord    float64      `json:"log_heap_bytes_per_record"`
	LogHeapPerRecordR   float64      `json:"log_heap_bytes_per_record_after_restart"`
	SeenHeapPerRecord   float64      `json:"seen_heap_bytes_per_id"`
	SeenHeapPerRecordR  float64      `json:"seen_heap_bytes_per_id_after_restart"`
	IndexSeconds        float64      `json:"index_seconds"` // a process indexing the whole log
	IndexFileMB         float64      `json:"index_file_mb"`
	LedgerFileMB        float64      `json:"ledger_file_mb"`
	EventLookup         latencyStats `json:"event_lookup"`
	Page100             latencyStats `json:"page100"`
	EventLookupWarm     latencyStats `json:"event_lookup_warm"` // the same lookups again
	Page100Warm         latencyStats `json:"page100_warm"`
	LostLog             uint64       `json:"lost_log_records"`
	LostSeen            uint64       `json:"lost_ids"`
	HeapSamplesMB       []float64    `json:"heap_samples_mb"`
	cacheExpireWaitSecs float64
}

// historyCacheExpire is how long the child is left idle before its heap is
// read: nats-server drops a message block's cache after a few seconds
// without access, and the last blocks written are still cached just after
// a fill.
const historyCacheExpire = 15 * time.Second

func (b *bench) historyScenarios(ctx context.Context) map[string][]runFunc {
	return map[string][]runFunc{"history10m": {func() (*result, error) { return b.history(ctx, b.p.historyRecords) }}}
}

// history runs history10m with n records of each kind.
func (b *bench) history(ctx context.Context, n int) (*result, error) {
	r := &result{Name: "history10m", Events: n,
		Description: fmt.Sprintf("%d delivery-log records and %d remembered ids written through hookjet's writers to a nats-server alone in a child process; its Go heap per record after the fill and after a restart; a process indexing the log; lookups at that size", n, n)}
	st := &historyStats{Records: n, cacheExpireWaitSecs: historyCacheExpire.Seconds()}
	dir, err := os.MkdirTemp("", "hookjet-history-")
	if err != nil {
		return r, err
	}
	defer func() { _ = os.RemoveAll(dir) }()
	srv, err := startNATSChild(ctx, filepath.Join(dir, "nats"))
	if err != nil {
		return r, err
	}
	defer func() { srv.stop() }()
	cfg := config.Default()
	cfg.Log.MaxBytes = 16 << 30
	cfg.Streams.MaxBytes = 1 << 30
	if err := historyEnsure(ctx, srv, &cfg); err != nil {
		return r, err
	}
	heap := func(what string) (float64, error) {
		time.Sleep(historyCacheExpire)
		h, err := srv.heap()
		mb := float64(h) / 1e6
		st.HeapSamplesMB = append(st.HeapSamplesMB, round(mb, 2))
		b.say("history10m: server heap %s: %.1f MB", what, mb)
		return float64(h), err
	}
	h0, err := heap("empty")
	if err != nil {
		return r, err
	}
	st.HeapEmptyMB = round(h0/1e6, 2)
	if err := b.historyFillLog(ctx, srv, n, st); err != nil {
		return r, err
	}
	h1, err := heap("after the log's fill")
	if err != nil {
		return r, err
	}
	if srv, err = srv.restart(ctx); err != nil {
		return r, err
	}
	h1r, err := heap("after a restart with the log")
	if err != nil {
		return r, err
	}
	if err := b.historyFillSeen(ctx, srv, &cfg, filepath.Join(dir, "state.db"), n, st); err != nil {
		return r, err
	}
	h2, err := heap("after the remembered ids' fill")
	if err != nil {
		return r, err
	}
	if srv, err = srv.restart(ctx); err != nil {
		return r, err
	}
	h2r, err := heap("after a restart with both")
	if err != nil {
		return r, err
	}
	per := func(a, b float64) float64 { return round((a-b)/float64(n), 2) }
	st.LogHeapPerRecord, st.LogHeapPerRecordR = per(h1, h0), per(h1r, h0)
	st.SeenHeapPerRecord, st.SeenHeapPerRecordR = per(h2, h1r), per(h2r, h1r)
	if err := b.historyLookups(ctx, srv, filepath.Join(dir, "log-index.db"), n, st); err != nil {
		return r, err
	}
	historyNotes(r, st)
	r.History = st
	r.Complete = st.LostLog == 0 && st.LostSeen == 0
	return r, nil
}

// historyEnsure creates hookjet's streams and the log on srv.
func historyEnsure(ctx context.Context, srv *natsChild, cfg *config.Config) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := jetstream.EnsureStreams(ctx, srv.js, cfg, nil); err != nil {
		return err
	}
	return jetstream.EnsureLog(ctx, srv.js, cfg, nil)
}

// historyRecord is the i-th record: events of one or two attempts over 10
// endpoints, as BenchmarkLogLookups writes them.
func historyRecord(i int) attempt.Record {
	return attempt.Record{EventID: "evt_" + strconv.Itoa(i/2), EventType: "order.created", Endpoint: "ep" + strconv.Itoa(i%10), Tenant: "acme",
		Attempt: 1 + i%2, Trigger: attempt.TriggerDelivery, Delivery: "1", StartedAt: time.Now(), DurationMS: 1.2, Status: 200, Class: attempt.ClassSuccess}
}

// historyFillLog writes n records through a LogWriter, never more than
// half its queue ahead of the acknowledgements.
func (b *bench) historyFillLog(ctx context.Context, srv *natsChild, n int, st *historyStats) error {
	w, err := jetstream.NewLogWriter(srv.nc, nil)
	if err != nil {
		return err
	}
	t0 := time.Now()
	for i := range n {
		w.Record(historyRecord(i))
		for w.Written()+w.Lost()+4096 < uint64(i) {
			if ctx.Err() != nil {
				w.Close()
				return ctx.Err()
			}
			time.Sleep(time.Millisecond)
		}
		if i > 0 && i%1000000 == 0 {
			b.say("history10m: %d log records written", i)
		}
	}
	w.Close()
	st.LogWriteSeconds = round(time.Since(t0).Seconds(), 2)
	st.LostLog = w.Lost()
	info, err := streamInfo(ctx, srv.js, jetstream.LogStream)
	if err != nil {
		return err
	}
	st.LogBytes = info.State.Bytes
	b.say("history10m: %d log records in %.1f s (%d lost), %d MB", n, st.LogWriteSeconds, st.LostLog, st.LogBytes>>20)
	return nil
}

// historyFillSeen announces n ids through SeenIDs, with a dedupe ledger in
// path that follows them as every process's does, and waits until it has
// applied every one.
func (b *bench) historyFillSeen(ctx context.Context, srv *natsChild, cfg *config.Config, path string, n int, st *historyStats) error {
	db, err := state.Open(path, 2*time.Second)
	if err != nil {
		return err
	}
	defer func() { _ = db.Close() }()
	ledger, err := dedupe.NewLedger(db, cfg.Dedupe.TTL, dedupe.WithBatch(1000, 2*time.Millisecond))
	if err != nil {
		return err
	}
	lctx, stopLedger := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); ledger.Run(lctx) }()
	defer func() { stopLedger(); <-ran }()
	seen, err := jetstream.OpenSeenIDs(srv.js, ledger, nil)
	if err != nil {
		return err
	}
	defer seen.Close()
	t0 := time.Now()
	for i := range n {
		seen.Announce(jetstream.SeenEvents, "evt_"+strconv.Itoa(i)+"_a1b2c3d4", uint64(i+1))
		for seen.Announced()+seen.Lost()+2048 < uint64(i) {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			time.Sleep(time.Millisecond)
		}
	}
	if err := seen.Flush(ctx); err != nil {
		return err
	}
	st.SeenWriteSeconds = round(time.Since(t0).Seconds(), 2)
	st.LostSeen = seen.Lost()
	// Ids share messages: the ledger has every one once it has applied
	// the stream's last message.
	filled, err := streamInfo(ctx, srv.js, jetstream.SeenStream)
	if err != nil {
		return err
	}
	for seen.Applied() < filled.State.LastSeq {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(10 * time.Millisecond)
	}
	st.SeenApplySeconds = round(time.Since(t0).Seconds(), 2)
	seen.Close()
	stopLedger()
	<-ran
	if fi, err := os.Stat(path); err == nil {
		st.LedgerFileMB = round(float64(fi.Size())/1e6, 1)
	}
	info, err := streamInfo(ctx, srv.js, jetstream.SeenStream)
	if err != nil {
		return err
	}
	st.SeenBytes = info.State.Bytes
	b.say("history10m: %d ids announced in %.1f s, followed into a ledger by %.1f s (%d lost), %d MB", n, st.SeenWriteSeconds, st.SeenApplySeconds, st.LostSeen, st.SeenBytes>>20)
	return nil
}

func streamInfo(ctx context.Context, js natsjs.JetStream, name string) (*natsjs.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.Info(ctx)
}

// historyLookups indexes the log as a starting process does, then times
// an event's lookup and a page of 100 of one endpoint's attempts at random
// depths, 200 of each.
func (b *bench) historyLookups(ctx context.Context, srv *natsChild, path string, n int, st *historyStats) error {
	info, err := streamInfo(ctx, srv.js, jetstream.LogStream)
	if err != nil {
		return err
	}
	t0 := time.Now()
	x, err := jetstream.FollowLog(srv.js, path, nil)
	if err != nil {
		return err
	}
	defer x.Close()
	for x.Applied() < info.State.LastSeq {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(10 * time.Millisecond)
	}
	st.IndexSeconds = round(time.Since(t0).Seconds(), 2)
	if fi, err := os.Stat(path); err == nil {
		st.IndexFileMB = round(float64(fi.Size())/1e6, 1)
	}
	b.say("history10m: a process indexed %d records in %.1f s", info.State.Msgs, st.IndexSeconds)
	rd := jetstream.NewLogReader(srv.nc, srv.js, x)
	cold, coldPages, err := historySample(ctx, rd, n)
	if err != nil {
		return err
	}
	warm, warmPages, err := historySample(ctx, rd, n) // the same lookups again: the server's block caches hold them
	if err != nil {
		return err
	}
	st.EventLookup, st.Page100 = summarise(cold), summarise(coldPages)
	st.EventLookupWarm, st.Page100Warm = summarise(warm), summarise(warmPages)
	return nil
}

// historySample times 200 event lookups and 200 pages of 100 at random
// depths.
func historySample(ctx context.Context, rd *jetstream.LogReader, n int) (lookups, pages []time.Duration, err error) {
	for i := 1; i <= 200; i++ {
		id := "evt_" + strconv.Itoa((i*7919)%(n/2))
		t := time.Now()
		got, err := rd.EventRecords(ctx, id)
		lookups = append(lookups, time.Since(t))
		if err != nil || len(got) == 0 || len(got) > 2 {
			return nil, nil, fmt.Errorf("event %s: %d records: %w", id, len(got), err)
		}
		before := uint64(1 + (i*104729)%n)
		t = time.Now()
		page, _, err := rd.Page(ctx, jetstream.LogQuery{Endpoint: "ep" + strconv.Itoa(i%10), Limit: 100, Before: before})
		pages = append(pages, time.Since(t))
		if err != nil || (len(page) != 100 && before > 2000) {
			return nil, nil, fmt.Errorf("page before %d: %d records: %w", before, len(page), err)
		}
	}
	return lookups, pages, nil
}

// historyNotes writes the figures into r's notes.
func historyNotes(r *result, st *historyStats) {
	r.Notes = append(r.Notes,
		fmt.Sprintf("server heap: empty %.1f MB; samples (empty, log, log after restart, log+ids, both after restart) %v MB (each after %.0f s idle)", st.HeapEmptyMB, st.HeapSamplesMB, st.cacheExpireWaitSecs),
		fmt.Sprintf("delivery log: %d records, %d MB, written in %.1f s; server heap %.2f B/record, %.2f B/record after a restart", st.Records, st.LogBytes>>20, st.LogWriteSeconds, st.LogHeapPerRecord, st.LogHeapPerRecordR),
		fmt.Sprintf("remembered ids: %d, %d MB, announced in %.1f s, followed into a ledger by %.1f s (state.db %.0f MB); server heap %.2f B/id, %.2f B/id after a restart", st.Records, st.SeenBytes>>20, st.SeenWriteSeconds, st.SeenApplySeconds, st.LedgerFileMB, st.SeenHeapPerRecord, st.SeenHeapPerRecordR),
		fmt.Sprintf("a process indexing the log: %.1f s (log-index.db %.0f MB); event lookup p50 %.2f ms p90 %.2f ms p99 %.2f ms; page of 100 p50 %.2f ms p90 %.2f ms p99 %.2f ms", st.IndexSeconds, st.IndexFileMB, st.EventLookup.P50, st.EventLookup.P90, st.EventLookup.P99, st.Page100.P50, st.Page100.P90, st.Page100.P99),
		fmt.Sprintf("the same lookups again (blocks cached): event p50 %.2f ms p99 %.2f ms; page of 100 p50 %.2f ms p99 %.2f ms", st.EventLookupWarm.P50, st.EventLookupWarm.P99, st.Page100Warm.P50, st.Page100Warm.P99),
	)
}

// historyChecks are history10m's targets: at most 16 B of server heap per
// record for the log and for the remembered ids, after the fill and after a
// restart; an event's lookup p99 <= 50 ms; a page of 100 p99 <= 100 ms.
func historyChecks(r *result) []check {
	mk := func(name, goal, unit string, value func(*historyStats) float64, ok func(float64) bool) check {
		c := check{name: name, goal: goal, unit: unit, need: "history10m"}
		if r != nil && r.History != nil {
			c.value = value(r.History)
			c.ok = ptr(ok(c.value) && r.Complete)
			c.detail = fmt.Sprintf("%d records of each", r.History.Records)
		}
		return c
	}
	le := func(max float64) func(float64) bool { return func(v float64) bool { return v <= max } }
	return []check{
		mk("delivery log: NATS server heap per record", "<= 16 B", "B", func(s *historyStats) float64 { return s.LogHeapPerRecord }, le(16)),
		mk("delivery log: NATS server heap per record after a restart", "<= 16 B", "B", func(s *historyStats) float64 { return s.LogHeapPerRecordR }, le(16)),
		mk("remembered ids: NATS server heap per id", "<= 16 B", "B", func(s *historyStats) float64 { return s.SeenHeapPerRecord }, le(16)),
		mk("remembered ids: NATS server heap per id after a restart", "<= 16 B", "B", func(s *historyStats) float64 { return s.SeenHeapPerRecordR }, le(16)),
		mk("delivery log: an event's records, p99", "<= 50 ms", "ms", func(s *historyStats) float64 { return s.EventLookup.P99 }, le(50)),
		mk("delivery log: a page of 100 of an endpoint's attempts, p99", "<= 100 ms", "ms", func(s *historyStats) float64 { return s.Page100.P99 }, le(100)),
	}
}

// natsChild is a nats-server alone in a child process (this binary with
// natsChildEnv set to its store), and a connection to it.
type natsChild struct {
	dir  string
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Scanner
	done chan error
	nc   *nats.Conn
	js   natsjs.JetStream
}

// startNATSChild starts the child on dir and connects.
func startNATSChild(ctx context.Context, dir string) (*natsChild, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(os.Environ(), natsChildEnv+"="+dir)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("nats-server child: %w", err)
	}
	c := &natsChild{dir: dir, cmd: cmd, in: in, out: bufio.NewScanner(out), done: make(chan error, 1)}
	go func() { c.done <- cmd.Wait() }()
	if !c.out.Scan() {
		c.stop()
		return nil, errors.New("nats-server child: no URL")
	}
	url := strings.TrimPrefix(c.out.Text(), "url ")
	if c.nc, err = nats.Connect(url); err != nil {
		c.stop()
		return nil, err
	}
	if c.js, err = natsjs.New(c.nc); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// heap asks the child for its live heap.
func (c *natsChild) heap() (uint64, error) {
	if _, err := io.WriteString(c.in, "heap\n"); err != nil {
		return 0, err
	}
	if !c.out.Scan() {
		return 0, errors.New("nats-server child: no answer")
	}
	return strconv.ParseUint(strings.TrimPrefix(c.out.Text(), "heap "), 10, 64)
}

// stop closes the connection and the child's stdin (it shuts its server
// down and exits) and waits for it.
func (c *natsChild) stop() {
	if c.nc != nil {
		c.nc.Close()
	}
	_ = c.in.Close()
	// The child's exit status says nothing here: it is stopped, or killed.
	var exit error
	select {
	case exit = <-c.done:
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		exit = <-c.done
	}
	_ = exit
}

// restart stops the child and starts another on the same store.
func (c *natsChild) restart(ctx context.Context) (*natsChild, error) {
	c.stop()
	return startNATSChild(ctx, c.dir)
}

// runNATSChild is the child: an embedded nats-server on dir; it prints
// "url <client URL>", answers each "heap" line on stdin with "heap <live
// bytes>", and shuts down at the end of stdin.
func runNATSChild(dir string, stdin io.Reader, stdout io.Writer) error {
	// nats.sync 2m: the scenario measures memory; with sync always every
	// announcement would be an fsync of its own on this one machine.
	ns, err := jetstream.StartEmbedded(config.NATS{Listen: "127.0.0.1:-1", Sync: "2m"}, dir)
	if err != nil {
		return err
	}
	defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
	fmt.Fprintln(stdout, "url "+ns.ClientURL())
	in := bufio.NewScanner(stdin)
	for in.Scan() {
		if in.Text() != "heap" {
			continue
		}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(stdout, "heap %d\n", ms.HeapAlloc)
	}
	return nil
}

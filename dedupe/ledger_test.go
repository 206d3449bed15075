package dedupe_test

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hookjet/hookjet/dedupe"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

const ttl = time.Hour

func TestFirstSeen(t *testing.T) {
	type step struct {
		advance   time.Duration
		id        string
		seq       uint64
		wantFirst uint64
		wantDup   bool
	}
	steps := []step{
		{id: "a", seq: 1, wantFirst: 1},
		{id: "a", seq: 1, wantFirst: 1},                // the same message again: not a duplicate
		{id: "a", seq: 2, wantFirst: 1, wantDup: true}, // a second message with the id
		{id: "b", seq: 3, wantFirst: 3},
		{advance: ttl - time.Nanosecond, id: "a", seq: 4, wantFirst: 1, wantDup: true},
		{advance: time.Nanosecond, id: "a", seq: 5, wantFirst: 5}, // expired: recorded anew
		{id: "a", seq: 1, wantFirst: 5, wantDup: true},
		{id: "b", seq: 6, wantFirst: 6},
	}
	for _, committed := range []bool{false, true} {
		t.Run(fmt.Sprintf("committed=%v", committed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// A long batch delay keeps records queued unless the
				// test waits for it.
				f := newFixture(t, ttl, dedupe.WithBatch(1000, time.Second))
				for i, st := range steps {
					f.clock.Advance(st.advance)
					first, dup, err := f.ledger.FirstSeen(st.id, st.seq)
					if err != nil {
						t.Fatalf("step %d: FirstSeen(%q, %d): %v", i, st.id, st.seq, err)
					}
					if first != st.wantFirst || dup != st.wantDup {
						t.Errorf("step %d: FirstSeen(%q, %d) = (%d, %v), want (%d, %v)",
							i, st.id, st.seq, first, dup, st.wantFirst, st.wantDup)
					}
					if committed {
						time.Sleep(time.Second)
						synctest.Wait()
						if q := dedupe.LedgerStats(f.ledger).Queued; q != 0 {
							t.Fatalf("step %d: %d records still queued", i, q)
						}
					}
				}
			})
		})
	}
}

func TestFirstSeenConcurrent(t *testing.T) {
	f := newFixture(t, ttl, dedupe.WithBatch(1000, 100*time.Microsecond))
	const rounds, callers = 30, 50
	for round := range rounds {
		id := "evt-" + strconv.Itoa(round)
		var (
			wg       sync.WaitGroup
			start    = make(chan struct{})
			recorded atomic.Int32
			firsts   = make(chan uint64, callers)
		)
		for i := range callers {
			seq := uint64(round*callers + i + 1)
			wg.Go(func() {
				<-start
				first, dup, err := f.ledger.FirstSeen(id, seq)
				if err != nil {
					t.Errorf("FirstSeen: %v", err)
					return
				}
				if !dup {
					recorded.Add(1)
					if first != seq {
						t.Errorf("not a duplicate but first %d != seq %d", first, seq)
					}
				}
				firsts <- first
			})
		}
		close(start)
		wg.Wait()
		close(firsts)
		if n := recorded.Load(); n != 1 {
			t.Fatalf("round %d: %d callers recorded their sequence, want exactly 1", round, n)
		}
		var want uint64
		for first := range firsts {
			if want == 0 {
				want = first
			}
			if first != want {
				t.Fatalf("round %d: callers disagree on the first sequence: %d and %d", round, want, first)
			}
		}
	}
}

func TestMarkDeliveredDoneAfterCommit(t *testing.T) {
	f := newFixture(t, ttl)
	type result struct {
		err     error
		inFile  bool
		viewErr error
	}
	const n = 50
	results := make(chan result, n)
	for i := range n {
		id := "evt-" + strconv.Itoa(i)
		f.ledger.MarkDelivered("crm", id, func(err error) {
			// A fresh read transaction sees the record as soon as done runs.
			r := result{err: err}
			r.viewErr = f.db.View(func(tx *bolt.Tx) error {
				r.inFile = tx.Bucket([]byte("dedupe_delivered")).Get(append([]byte{3}, "crm"+id...)) != nil
				return nil
			})
			results <- r
		})
	}
	for range n {
		r := <-results
		if r.err != nil || r.viewErr != nil {
			t.Fatalf("done(%v), view: %v", r.err, r.viewErr)
		}
		if !r.inFile {
			t.Fatal("done called before the record was in the file")
		}
	}
	for i := range n {
		ok, err := f.ledger.Delivered("crm", "evt-"+strconv.Itoa(i))
		if err != nil || !ok {
			t.Fatalf("Delivered = %v, %v; want true", ok, err)
		}
	}
}

func TestDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, ttl, dedupe.WithBatch(1000, time.Second))
		delivered := func(endpoint, id string) bool {
			t.Helper()
			ok, err := f.ledger.Delivered(endpoint, id)
			if err != nil {
				t.Fatalf("Delivered(%q, %q): %v", endpoint, id, err)
			}
			return ok
		}

		var calls atomic.Int32
		f.ledger.MarkDelivered("ab", "c", func(error) { calls.Add(1) })
		synctest.Wait()
		if calls.Load() != 0 {
			t.Fatal("done called before the batch delay passed")
		}
		if !delivered("ab", "c") {
			t.Error("queued delivery not reported")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if calls.Load() != 1 {
			t.Fatalf("done called %d times after the batch committed, want 1", calls.Load())
		}

		tests := []struct {
			endpoint, id string
			want         bool
		}{
			{"ab", "c", true},
			{"a", "bc", false}, // keys do not run together
			{"abc", "c", false},
			{"ab", "cd", false},
			{"other", "c", false},
		}
		for _, tt := range tests {
			if got := delivered(tt.endpoint, tt.id); got != tt.want {
				t.Errorf("Delivered(%q, %q) = %v, want %v", tt.endpoint, tt.id, got, tt.want)
			}
		}

		f.clock.Advance(ttl)
		if delivered("ab", "c") {
			t.Error("delivery older than the ttl still reported before the sweep")
		}
	})
}

func TestBatching(t *testing.T) {
	tests := []struct {
		name        string
		records     int
		wantCommits uint64
		wait        bool // whether the batch needs the delay to pass
	}{
		{name: "full batch commits at once", records: 1000, wantCommits: 1},
		{name: "partial batch waits for the delay", records: 5, wantCommits: 1, wait: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newFixture(t, ttl, dedupe.WithBatch(1000, 5*time.Millisecond))
				var done atomic.Int32
				for i := range tt.records {
					f.ledger.MarkDelivered("crm", "evt-"+strconv.Itoa(i), func(err error) {
						if err != nil {
							t.Errorf("done(%v)", err)
						}
						done.Add(1)
					})
				}
				synctest.Wait()
				if tt.wait {
					if n := done.Load(); n != 0 {
						t.Fatalf("%d callbacks before the batch delay", n)
					}
					time.Sleep(5 * time.Millisecond)
					synctest.Wait()
				}
				if n := done.Load(); n != int32(tt.records) {
					t.Fatalf("%d of %d callbacks called", n, tt.records)
				}
				st := dedupe.LedgerStats(f.ledger)
				if st.Commits != tt.wantCommits || st.Deliveries != int64(tt.records) || st.Queued != 0 {
					t.Errorf("Stats = %+v, want %d commits, %d deliveries, none queued", st, tt.wantCommits, tt.records)
				}
			})
		})
	}
}

func TestManyRecordsFewTransactions(t *testing.T) {
	f := newFixture(t, ttl)
	const n = 5000
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		f.ledger.MarkDelivered("crm", "evt-"+strconv.Itoa(i), func(err error) {
			if err != nil {
				t.Errorf("done(%v)", err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	// However the queue was split, each transaction but the last of a run
	// is full or waited for the delay: far fewer than one per record.
	if st := dedupe.LedgerStats(f.ledger); st.Commits == 0 || st.Commits > n/100 {
		t.Errorf("%d records took %d transactions, want at most %d", n, st.Commits, n/100)
	}
}

func TestCommitFailure(t *testing.T) {
	f := newFixture(t, ttl)
	if err := f.db.Close(); err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	f.ledger.MarkDelivered("crm", "evt", func(err error) { errc <- err })
	if err := <-errc; !errors.Is(err, bolterrors.ErrDatabaseNotOpen) {
		t.Fatalf("done(%v), want an error wrapping ErrDatabaseNotOpen", err)
	}
	if st := dedupe.LedgerStats(f.ledger); st.CommitErrors != 1 || st.Commits != 0 {
		t.Errorf("Stats = %+v, want 1 commit error and no commits", st)
	}
	if _, err := f.ledger.Delivered("crm", "evt"); err == nil {
		t.Error("Delivered on a closed file succeeded")
	}
}

func TestShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A batch delay far beyond the test: only shutdown commits.
		f := newFixture(t, ttl, dedupe.WithBatch(1000, time.Hour))
		var calls atomic.Int32
		for i := range 10 {
			f.ledger.MarkDelivered("crm", "evt-"+strconv.Itoa(i), func(err error) {
				if err != nil {
					t.Errorf("done(%v)", err)
				}
				calls.Add(1)
			})
		}
		if _, _, err := f.ledger.FirstSeen("evt-0", 1); err != nil {
			t.Fatal(err)
		}
		f.stop()
		if n := calls.Load(); n != 10 {
			t.Fatalf("%d of 10 callbacks called when Run returned", n)
		}
		if keys := f.keys(t, "dedupe_delivered"); len(keys) != 10 {
			t.Errorf("%d deliveries in the file, want 10", len(keys))
		}
		if keys := f.keys(t, "dedupe_seen"); !slices.Equal(keys, []string{"evt-0"}) {
			t.Errorf("seen ids in the file = %q, want [evt-0]", keys)
		}

		var err error
		f.ledger.MarkDelivered("crm", "late", func(e error) { err = e })
		if !errors.Is(err, dedupe.ErrClosed) {
			t.Errorf("MarkDelivered after shutdown: done(%v), want ErrClosed at once", err)
		}
		if _, _, err := f.ledger.FirstSeen("late", 1); !errors.Is(err, dedupe.ErrClosed) {
			t.Errorf("FirstSeen after shutdown: %v, want ErrClosed", err)
		}
	})
}

func TestSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, ttl, dedupe.WithBatch(1000, time.Millisecond))
		flush := func() {
			time.Sleep(time.Millisecond)
			synctest.Wait()
		}
		sweep := func() {
			time.Sleep(dedupe.SweepInterval)
			synctest.Wait()
		}
		mustFirstSeen := func(id string, seq, wantFirst uint64) {
			t.Helper()
			first, _, err := f.ledger.FirstSeen(id, seq)
			if err != nil || first != wantFirst {
				t.Fatalf("FirstSeen(%q, %d) = %d, %v; want first %d", id, seq, first, err, wantFirst)
			}
		}

		mustFirstSeen("old", 1, 1)
		mustFirstSeen("renewed", 2, 2)
		f.markDelivered(t, "crm", "old")
		flush()
		f.clock.Advance(ttl + time.Minute)
		// "renewed" expired and is recorded again: its old index entry
		// must not delete the new record.
		mustFirstSeen("renewed", 3, 3)
		mustFirstSeen("young", 4, 4)
		flush()

		sweep()
		if got, want := f.keys(t, "dedupe_seen"), []string{"renewed", "young"}; !slices.Equal(got, want) {
			t.Errorf("seen after sweep = %q, want %q", got, want)
		}
		if got := f.keys(t, "dedupe_delivered"); len(got) != 0 {
			t.Errorf("deliveries after sweep = %q, want none", got)
		}
		if got := f.keys(t, "dedupe_expiry"); len(got) != 2 {
			t.Errorf("%d index entries after sweep, want 2", len(got))
		}
		st := dedupe.LedgerStats(f.ledger)
		if st.Expired != 2 || st.SeenIDs != 2 || st.Deliveries != 0 {
			t.Errorf("Stats = %+v, want 2 expired, 2 seen ids, 0 deliveries", st)
		}
		mustFirstSeen("renewed", 9, 3)
	})
}

func TestSweepInChunks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, ttl, dedupe.WithBatch(1000, time.Millisecond))
		dedupe.SetSweepChunk(f.ledger, 3)
		const n = 10
		for i := range n {
			f.markDelivered(t, "crm", "evt-"+strconv.Itoa(i))
		}
		f.clock.Advance(ttl)

		// One tick starts the sweep; it carries on chunk after chunk
		// without waiting for the next tick.
		time.Sleep(dedupe.SweepInterval)
		synctest.Wait()
		if got := f.keys(t, "dedupe_delivered"); len(got) != 0 {
			t.Errorf("%d deliveries left after one sweep tick, want 0", len(got))
		}
		if got := f.keys(t, "dedupe_expiry"); len(got) != 0 {
			t.Errorf("%d index entries left, want 0", len(got))
		}
		if st := dedupe.LedgerStats(f.ledger); st.Expired != n {
			t.Errorf("Expired = %d, want %d", st.Expired, n)
		}
	})
}

func TestPersistence(t *testing.T) {
	f := newFixture(t, ttl)
	if _, _, err := f.ledger.FirstSeen("evt-1", 7); err != nil {
		t.Fatal(err)
	}
	f.markDelivered(t, "crm", "evt-1")
	f.clock.Advance(ttl / 2)
	f.restart(t)

	st := dedupe.LedgerStats(f.ledger)
	if st.SeenIDs != 1 || st.Deliveries != 1 {
		t.Errorf("Stats after reopen = %+v, want 1 seen id and 1 delivery", st)
	}
	first, dup, err := f.ledger.FirstSeen("evt-1", 8)
	if err != nil || first != 7 || !dup {
		t.Errorf("FirstSeen after reopen = (%d, %v, %v), want (7, true, nil)", first, dup, err)
	}
	ok, err := f.ledger.Delivered("crm", "evt-1")
	if err != nil || !ok {
		t.Errorf("Delivered after reopen = %v, %v; want true", ok, err)
	}
}

func TestInvalidIDs(t *testing.T) {
	f := newFixture(t, ttl)
	long := strings.Repeat("x", dedupe.MaxIDLen+1)
	tests := []struct {
		name         string
		endpoint, id string
	}{
		{name: "empty id", endpoint: "crm", id: ""},
		{name: "long id", endpoint: "crm", id: long},
		{name: "empty endpoint", endpoint: "", id: "evt"},
		{name: "long endpoint", endpoint: long, id: "evt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.endpoint != "" && len(tt.endpoint) <= dedupe.MaxIDLen {
				if _, _, err := f.ledger.FirstSeen(tt.id, 1); !errors.Is(err, dedupe.ErrInvalidID) {
					t.Errorf("FirstSeen: %v, want ErrInvalidID", err)
				}
			}
			if _, err := f.ledger.Delivered(tt.endpoint, tt.id); !errors.Is(err, dedupe.ErrInvalidID) {
				t.Errorf("Delivered: %v, want ErrInvalidID", err)
			}
			errc := make(chan error, 1)
			f.ledger.MarkDelivered(tt.endpoint, tt.id, func(err error) { errc <- err })
			if err := <-errc; !errors.Is(err, dedupe.ErrInvalidID) {
				t.Errorf("MarkDelivered: done(%v), want ErrInvalidID", err)
			}
		})
	}
	// The longest valid ids fit in bbolt's key limits.
	maxID := strings.Repeat("y", dedupe.MaxIDLen)
	f.markDelivered(t, maxID, maxID)
	if _, _, err := f.ledger.FirstSeen(maxID, 1); err != nil {
		t.Errorf("FirstSeen with the longest id: %v", err)
	}
}

func TestMalformedEntriesAreRepaired(t *testing.T) {
	f := newFixture(t, ttl)
	err := f.db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket([]byte("dedupe_seen")).Put([]byte("evt"), []byte{9, 9}); err != nil {
			return err
		}
		return tx.Bucket([]byte("dedupe_delivered")).Put(append([]byte{3}, "crmevt"...), []byte{2})
	})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := f.ledger.Delivered("crm", "evt"); ok || err != nil {
		t.Errorf("Delivered on a malformed entry = %v, %v; want false, nil", ok, err)
	}
	if first, dup, err := f.ledger.FirstSeen("evt", 5); first != 5 || dup || err != nil {
		t.Fatalf("FirstSeen on a malformed entry = (%d, %v, %v), want (5, false, nil)", first, dup, err)
	}
	f.markDelivered(t, "crm", "evt")
	f.restart(t) // past the queue: the file answers
	if first, dup, err := f.ledger.FirstSeen("evt", 6); first != 5 || !dup || err != nil {
		t.Errorf("FirstSeen after repair = (%d, %v, %v), want (5, true, nil)", first, dup, err)
	}
	if ok, err := f.ledger.Delivered("crm", "evt"); !ok || err != nil {
		t.Errorf("Delivered after repair = %v, %v; want true, nil", ok, err)
	}
}

func TestNewLedgerRejectsTTL(t *testing.T) {
	for _, ttl := range []time.Duration{0, -time.Second} {
		t.Run(ttl.String(), func(t *testing.T) {
			if _, err := dedupe.NewLedger(nil, ttl); err == nil {
				t.Errorf("NewLedger(ttl %v) succeeded", ttl)
			}
		})
	}
}

func BenchmarkFirstSeenHit(b *testing.B) {
	f := newFixture(b, ttl)
	if _, _, err := f.ledger.FirstSeen("evt-hit", 1); err != nil {
		b.Fatal(err)
	}
	f.restart(b) // the record is in the file, not queued
	b.ReportAllocs()
	for b.Loop() {
		if _, dup, err := f.ledger.FirstSeen("evt-hit", 2); err != nil || !dup {
			b.Fatalf("dup %v, err %v", dup, err)
		}
	}
}

func BenchmarkFirstSeenMiss(b *testing.B) {
	f := newFixture(b, ttl)
	var seq uint64
	buf := make([]byte, 0, 32)
	b.ReportAllocs()
	for b.Loop() {
		seq++
		buf = strconv.AppendUint(append(buf[:0], "evt-"...), seq, 10)
		if _, dup, err := f.ledger.FirstSeen(string(buf), seq); err != nil || dup {
			b.Fatalf("dup %v, err %v", dup, err)
		}
	}
}

func BenchmarkDeliveredHit(b *testing.B) {
	f := newFixture(b, ttl)
	f.markDelivered(b, "crm", "evt-hit")
	b.ReportAllocs()
	for b.Loop() {
		if ok, err := f.ledger.Delivered("crm", "evt-hit"); err != nil || !ok {
			b.Fatalf("ok %v, err %v", ok, err)
		}
	}
}

// BenchmarkMarkDelivered measures throughput up to durability: every
// callback has run when the benchmark ends.
func BenchmarkMarkDelivered(b *testing.B) {
	f := newFixture(b, ttl)
	var (
		wg  sync.WaitGroup
		seq uint64
		buf = make([]byte, 0, 32)
	)
	done := func(err error) {
		if err != nil {
			b.Error(err)
		}
		wg.Done()
	}
	b.ReportAllocs()
	for b.Loop() {
		seq++
		buf = strconv.AppendUint(append(buf[:0], "evt-"...), seq, 10)
		wg.Add(1)
		f.ledger.MarkDelivered("crm", string(buf), done)
	}
	wg.Wait()
}

// Readiness sees a state file that no longer answers.
func TestCheckSeesAClosedFile(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "state.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	l, err := dedupe.NewLedger(db, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err != nil {
		t.Fatalf("open file: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Check(); err == nil {
		t.Fatal("a closed state file passes the check")
	}
}

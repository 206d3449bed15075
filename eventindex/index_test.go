package eventindex

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// entryAt is the test event at seq: five types, tenants t0..t6 with every
// eighth event without one, ids evt_<seq> with two ids repeated.
func entryAt(seq uint64) Entry {
	tenant := fmt.Sprintf("t%d", seq%7)
	if seq%8 == 0 {
		tenant = ""
	}
	id := fmt.Sprintf("evt_%06d", seq)
	if seq == 70000 || seq == 70001 {
		id = "dup"
	}
	return Entry{
		Seq: seq, ID: id, Type: fmt.Sprintf("order.k%d", seq%5), Tenant: tenant, Key: "k",
		PublishedAt: t0.Add(time.Duration(seq) * time.Millisecond), Size: int(seq % 1000),
	}
}

func openIndex(t *testing.T, path string) *Index {
	t.Helper()
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := x.f.Check(); err != nil {
			t.Errorf("index file check: %v", err)
		}
		_ = x.Close()
	})
	return x
}

func fill(t *testing.T, x *Index, from, to uint64) {
	t.Helper()
	for s := from; s <= to; s++ {
		if err := x.Add(entryAt(s)); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(); err != nil {
		t.Fatal(err)
	}
}

// all pages through q to its end and returns the sequences, failing on a
// page that is not newest first.
func all(t *testing.T, x *Index, q Query) []uint64 {
	t.Helper()
	var out []uint64
	for range 10000 {
		page, next, err := x.Page(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			if len(out) > 0 && e.Seq >= out[len(out)-1] {
				t.Fatalf("%+v: %d after %d: not newest first", q, e.Seq, out[len(out)-1])
			}
			if e != entryAt(e.Seq) {
				t.Fatalf("entry %d read back as %+v", e.Seq, e)
			}
			out = append(out, e.Seq)
		}
		if next == 0 {
			return out
		}
		q.Before = next
	}
	t.Fatalf("%+v: no end after 10000 pages", q)
	return nil
}

// want is the reference answer: the sequences in 1..last matching q, newest
// first.
func want(q Query, first, last uint64) []uint64 {
	var out []uint64
	for s := last; s >= max(first, 1); s-- {
		e := entryAt(s)
		if q.match(&e) {
			out = append(out, s)
		}
	}
	return out
}

func TestPagesListEveryMatchingEventNewestFirst(t *testing.T) {
	x := openIndex(t, filepath.Join(t.TempDir(), "events.db"))
	const last = 3*GenSize + 5000 // three sealed generations and a live one
	fill(t, x, 1, last)
	if s := x.Stats(); s.Generations != 3 || s.InMemory != 5000 {
		t.Fatalf("stats %+v, want 3 generations and 5000 in memory", s)
	}
	queries := []Query{
		{Limit: 1000},
		{Type: "order.k3", Limit: 500},
		{Tenant: "t4", Limit: 700},
		{Tenant: "t4", Type: "order.k1", Limit: 100},
		{Prefix: "evt_0123", Limit: 3},                 // narrow: the id keys serve it
		{Prefix: "evt_", Type: "order.k2", Limit: 999}, // broad: checked on the summaries
		{Prefix: "du"},
		{Since: t0.Add(40000 * time.Millisecond), Until: t0.Add(90000 * time.Millisecond), Limit: 1000},
		{Since: t0.Add(100500 * time.Millisecond), Tenant: "t1", Limit: 50},
		{Until: t0.Add(1000 * time.Millisecond), Type: "order.k0"},
		{Type: "no.such.type"},
		{First: 50000, Tenant: "t2", Limit: 1000},
	}
	for _, q := range queries {
		t.Run(fmt.Sprintf("%+v", q), func(t *testing.T) {
			got, exp := all(t, x, q), want(q, q.First, last)
			if len(exp) == 0 && q.Type != "no.such.type" {
				t.Fatal("the reference answer is empty: a useless case")
			}
			if !slices.Equal(got, exp) {
				t.Fatalf("got %d events, want %d (first got %v, want %v)", len(got), len(exp), head(got), head(exp))
			}
		})
	}
}

func head(s []uint64) []uint64 { return s[:min(len(s), 5)] }

func TestFullPageNamesTheCursorAndAShortOneNone(t *testing.T) {
	x := openIndex(t, filepath.Join(t.TempDir(), "events.db"))
	fill(t, x, 1, 250)
	page, next, err := x.Page(Query{Limit: 100})
	if err != nil || len(page) != 100 || next != 151 || page[0].Seq != 250 {
		t.Fatalf("first page: %d events from %d, next %d, %v; want 100 from 250, next 151", len(page), page[0].Seq, next, err)
	}
	page, next, err = x.Page(Query{Limit: 100, Before: 51})
	if err != nil || len(page) != 50 || next != 0 {
		t.Fatalf("last page: %d events, next %d, %v; want 50 and no cursor", len(page), next, err)
	}
}

func TestCursorHoldsWhileEventsArrive(t *testing.T) {
	x := openIndex(t, filepath.Join(t.TempDir(), "events.db"))
	const before = GenSize + 100
	fill(t, x, 1, before)
	q := Query{Tenant: "t3", Limit: 200}
	var got []uint64
	for page := 0; ; page++ {
		entries, next, err := x.Page(q)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			got = append(got, e.Seq)
		}
		if page == 1 { // events published while the client pages, across a seal
			fill(t, x, before+1, before+GenSize)
		}
		if next == 0 {
			break
		}
		q.Before = next
	}
	if exp := want(Query{Tenant: "t3"}, 1, before); !slices.Equal(got, exp) {
		t.Fatalf("paging while events arrived: got %d events (%v...), want the %d stored when it began", len(got), head(got), len(exp))
	}
}

func TestIndexSurvivesReopenAndResumesAfterTheLastSealedSequence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Reset("stream-1"); err != nil {
		t.Fatal(err)
	}
	fill(t, x, 1, GenSize+10)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x = openIndex(t, path)
	if x.Sealed() != GenSize || x.Applied() != GenSize || x.Stream() != "stream-1" {
		t.Fatalf("reopened: sealed %d, applied %d, stream %q; want %d, %d, stream-1", x.Sealed(), x.Applied(), x.Stream(), GenSize, GenSize)
	}
	fill(t, x, x.Applied()+1, GenSize+20) // what the follower reads again
	if got, exp := all(t, x, Query{Type: "order.k4"}), want(Query{Type: "order.k4"}, 1, GenSize+20); !slices.Equal(got, exp) {
		t.Fatalf("after reopening: %d events, want %d", len(got), len(exp))
	}
}

func TestPruneForgetsEventsTheStreamDropped(t *testing.T) {
	x := openIndex(t, filepath.Join(t.TempDir(), "events.db"))
	const last = 2*GenSize + 100
	fill(t, x, 1, last)
	const first = GenSize + 7 // the stream's first sequence now
	if err := x.Prune(first); err != nil {
		t.Fatal(err)
	}
	if s := x.Stats(); s.Generations != 1 {
		t.Fatalf("after pruning below %d: %d generations in the file, want 1", first, s.Generations)
	}
	got := all(t, x, Query{First: first, Limit: 1000})
	if len(got) != last-first+1 || got[len(got)-1] != first {
		t.Fatalf("after pruning: %d events down to %d, want %d down to %d", len(got), got[len(got)-1], last-first+1, first)
	}
	// Everything gone, the live generation's summaries included.
	if err := x.Prune(last + 1); err != nil {
		t.Fatal(err)
	}
	if s := x.Stats(); s.Generations != 0 || s.InMemory != 0 {
		t.Fatalf("after the stream emptied: %+v, want nothing", s)
	}
	if got := all(t, x, Query{}); len(got) != 0 {
		t.Fatalf("after the stream emptied: %d events listed", len(got))
	}
}

func TestLookupFindsTheNewestEventWithAnID(t *testing.T) {
	x := openIndex(t, filepath.Join(t.TempDir(), "events.db"))
	fill(t, x, 1, 3*GenSize+10)
	for _, tc := range []struct {
		id   string
		want uint64
	}{{"evt_000005", 5}, {"dup", 70001}, {"evt_065540", 65540}, {"nope", 0}} {
		e, found, err := x.Lookup(tc.id)
		if err != nil || found != (tc.want != 0) || e.Seq != tc.want {
			t.Errorf("Lookup(%q) = %d, %v, %v; want %d", tc.id, e.Seq, found, err, tc.want)
		}
	}
	fill(t, x, 3*GenSize+11, 3*GenSize+20)
	if e, found, _ := x.Lookup(fmt.Sprintf("evt_%06d", 3*GenSize+15)); !found || e.Seq != 3*GenSize+15 {
		t.Errorf("an event in memory: %d, %v", e.Seq, found)
	}
}

func TestSkipLeavesGenerationsTheStreamNoLongerHasEmpty(t *testing.T) {
	x := openIndex(t, filepath.Join(t.TempDir(), "events.db"))
	fill(t, x, 1, 10)
	if err := x.Skip(3*GenSize + 5); err != nil {
		t.Fatal(err)
	}
	if x.Applied() != 3*GenSize+4 || x.Sealed() != 3*GenSize {
		t.Fatalf("after skipping: applied %d, sealed %d", x.Applied(), x.Sealed())
	}
	fill(t, x, 3*GenSize+5, 3*GenSize+9)
	if got := all(t, x, Query{}); len(got) != 15 || got[0] != 3*GenSize+9 || got[14] != 1 {
		t.Fatalf("after skipping: %v", got)
	}
}

func TestARareMatchInMemoryIsFoundInOnePage(t *testing.T) {
	x := openIndex(t, filepath.Join(t.TempDir(), "events.db"))
	fill(t, x, 1, GenSize-1) // all in memory
	page, next, err := x.Page(Query{Prefix: "evt_00001"})
	if err != nil || len(page) != 10 || next != 0 {
		t.Fatalf("prefix evt_00001 among %d events in memory: %d events, next %d, %v; want 10 and no cursor", GenSize-1, len(page), next, err)
	}
}

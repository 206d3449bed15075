package logindex

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"
)

// TestIndexAcrossGenerationsAndRestart indexes records over several
// generations, reopens the file (the live generation is lost and read
// again from the sealed sequence on), prunes what the stream dropped, and
// checks an event's and an endpoint's sequences each time.
func TestIndexAcrossGenerationsAndRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log-index.db")
	x, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3*GenSize + 500
	add := func(x *Index, from uint64) {
		for seq := from; seq <= n; seq++ {
			id := "evt_" + strconv.FormatUint(seq/4, 10) // four records per event
			if err := x.Add(seq, id, "ep"+strconv.FormatUint(seq%3, 10)); err != nil {
				t.Fatal(err)
			}
		}
	}
	add(x, 1)
	check := func(x *Index, first uint64) {
		t.Helper()
		for _, e := range []uint64{1, GenSize / 4, (2*GenSize + 7) / 4, n/4 - 1} {
			got, err := x.EventSeqs("evt_" + strconv.FormatUint(e, 10))
			if err != nil {
				t.Fatal(err)
			}
			var want []uint64
			for s := max(4*e, 1, first); s < 4*e+4 && s <= n; s++ {
				want = append(want, s)
			}
			if !slices.Equal(got, want) {
				t.Errorf("event %d: %v, want %v", e, got, want)
			}
		}
		// Endpoint ep1, newest first, in pages of 1000 across generations.
		hi, count := uint64(n), 0
		newest := uint64(n)
		for newest%3 != 1 {
			newest--
		}
		for {
			page, err := x.EndpointSeqs("ep1", first, hi, 1000)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page {
				if s%3 != 1 || s > hi || s < first {
					t.Fatalf("ep1 page holds %d (hi %d)", s, hi)
				}
				if count == 0 && s != newest {
					t.Fatalf("ep1's newest is %d", s)
				}
				hi = s - 1
				count++
			}
			if len(page) < 1000 {
				break
			}
		}
		want := 0
		for s := first; s <= n; s++ {
			if s%3 == 1 {
				want++
			}
		}
		if count != want {
			t.Errorf("ep1 has %d sequences from %d, want %d", count, first, want)
		}
	}
	check(x, 1)
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}

	x, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Sealed() != 3*GenSize {
		t.Fatalf("sealed %d after a restart, want %d", x.Sealed(), 3*GenSize)
	}
	add(x, x.Applied()+1)
	check(x, 1)
	if err := x.Prune(GenSize + 10); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.EventSeqs("evt_1"); len(got) != 0 {
		t.Errorf("a pruned generation's event: %v", got)
	}
	check(x, GenSize+1)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if x.Wait(ctx, n+1) {
		t.Error("Wait for a sequence not added returned true")
	}
	if !x.Wait(context.Background(), n) {
		t.Error("Wait for an added sequence returned false")
	}
}

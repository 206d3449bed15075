package jetstream

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/config"
)

// TestLogIndexResumesAndFollowsANewStream indexes records, stops the
// process's index, writes more while it is down, and starts it again on the
// same file: every record is found. Then HOOKJET_LOG is created anew: the
// index forgets the old stream's records and finds the new one's.
func TestLogIndexResumesAndFollowsANewStream(t *testing.T) {
	js := startJS(t)
	ctx := context.Background()
	cfg := config.Default()
	if err := EnsureLog(ctx, js, &cfg, nil); err != nil {
		t.Fatal(err)
	}
	w, err := NewLogWriter(js.Conn(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	path := filepath.Join(t.TempDir(), "log-index.db")
	write := func(from, to int) {
		for i := from; i < to; i++ {
			w.Record(rec("a", "evt_"+strconv.Itoa(i), 1, attempt.ClassSuccess))
		}
		waitStored(t, w, uint64(to))
	}
	count := func(r *LogReader, id string) int {
		t.Helper()
		got, err := r.EventRecords(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	write(0, 10)
	x, err := FollowLog(js, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := count(NewLogReader(js.Conn(), js, x), "evt_3"); n != 1 {
		t.Fatalf("evt_3: %d records, want 1", n)
	}
	x.Close()

	write(10, 20) // while no process follows
	x, err = FollowLog(js, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r := NewLogReader(js.Conn(), js, x)
	for _, id := range []string{"evt_3", "evt_15"} {
		if n := count(r, id); n != 1 {
			t.Errorf("after a restart of the index, %s: %d records, want 1", id, n)
		}
	}
	page, next, err := r.Page(ctx, LogQuery{Endpoint: "a", Limit: 100})
	if err != nil || len(page) != 20 || next != 0 {
		t.Errorf("a's page: %d records, next %d, %v; want all 20", len(page), next, err)
	}

	if err := js.DeleteStream(ctx, LogStream); err != nil {
		t.Fatal(err)
	}
	if err := EnsureLog(ctx, js, &cfg, nil); err != nil {
		t.Fatal(err)
	}
	w.Record(rec("b", "evt_new", 1, attempt.ClassSuccess))
	waitStored(t, w, 21)
	deadline := time.Now().Add(30 * time.Second)
	for {
		old, fresh := count(r, "evt_3"), count(r, "evt_new")
		if old == 0 && fresh == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after HOOKJET_LOG was created anew: evt_3 %d records (want 0), evt_new %d (want 1)", old, fresh)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

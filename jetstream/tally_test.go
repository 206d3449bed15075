package jetstream

import (
	"fmt"
	"testing"
	"time"

	"github.com/hookjet/hookjet/attempt"
)

// The last hour's figures come from the shared bucket, not from one
// process's memory: two processes see the same totals, and a process that
// starts later (a restart) sees what was delivered before it started.
func TestTallyLastHourIsSharedAndSurvivesRestart(t *testing.T) {
	js := startJS(t)
	a, err := NewTally(t.Context(), js, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewTally(t.Context(), js, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 7 {
		a.Record(attempt.Record{EventID: fmt.Sprint(i), Endpoint: "crm", Class: attempt.ClassSuccess, StartedAt: now.Add(-time.Duration(i) * time.Minute)})
	}
	for i := range 3 {
		b.Record(attempt.Record{EventID: fmt.Sprint(i), Endpoint: "crm", Class: attempt.ClassTransient, StartedAt: now})
	}
	b.Record(attempt.Record{EventID: "x", Endpoint: "crm", Class: attempt.ClassParked, StartedAt: now})                           // not an attempt
	b.Record(attempt.Record{EventID: "old", Endpoint: "crm", Class: attempt.ClassSuccess, StartedAt: now.Add(-61 * time.Minute)}) // past the hour
	want := func(tl *Tally, name string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			d, f := tl.LastHour(time.Now())
			if d == 7 && f == 3 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last hour delivered %d failed %d, want 7 and 3", name, d, f)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	want(a, "process a")
	want(b, "process b")
	a.Close()
	b.Close()
	restarted, err := NewTally(t.Context(), js, 1, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	if d, f := restarted.LastHour(time.Now()); d != 7 || f != 3 {
		t.Errorf("after a restart: delivered %d failed %d, want 7 and 3 at once", d, f)
	}
}

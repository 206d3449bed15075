package webhook

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The in-memory Deduper is a Store: a failure releases the id, a success
// is remembered, a concurrent copy is in progress; Counted counts each.
func TestDeduperOnce(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewDedupeMetrics(reg)
	s := Counted(NewDeduper(0, 0), m, "memory")
	ctx := context.Background()
	boom := errors.New("boom")
	runs := 0
	ok := func(context.Context) error { runs++; return nil }
	if dup, err := s.Once(ctx, "a", func(context.Context) error { return boom }); dup || !errors.Is(err, boom) {
		t.Fatalf("failing: %v %v", dup, err)
	}
	if dup, err := s.Once(ctx, "a", ok); dup || err != nil || runs != 1 {
		t.Fatalf("retry: %v %v runs=%d", dup, err, runs)
	}
	if dup, err := s.Once(ctx, "a", ok); !dup || err != nil || runs != 1 {
		t.Fatalf("copy: %v %v runs=%d", dup, err, runs)
	}
	_, err := s.Once(ctx, "b", func(ctx context.Context) error {
		_, err := s.Once(ctx, "b", ok)
		if !errors.Is(err, ErrInProgress) {
			t.Errorf("nested copy: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for outcome, want := range map[string]float64{"processed": 2, "duplicate": 1, "failed": 1, "in_progress": 1} {
		if got := testutil.ToFloat64(m.total.WithLabelValues("memory", outcome)); got != want {
			t.Errorf("%s = %v, want %v", outcome, got, want)
		}
	}
}

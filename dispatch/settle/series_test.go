package settle

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The first max endpoints get series of their own, the rest share
// "_other"; a removed endpoint's place goes to the next, and its series
// are deleted; a removed endpoint's late results bring none back.
func TestSeriesBoundTheEndpointLabels(t *testing.T) {
	deferrals := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "d"}, []string{"endpoint", "cause"})
	var forgotten []string
	s := NewSeries(Counters{Deferrals: deferrals, Forget: func(l string) { forgotten = append(forgotten, l) }}, 2)
	for id, want := range map[string]string{"a": "a", "b": "b"} {
		if got := s.Label(id); got != want {
			t.Fatalf("Label(%s) = %s, want %s", id, got, want)
		}
	}
	if got := s.Label("c"); got != OtherSeries {
		t.Fatalf("the third endpoint's label = %s, want %s", got, OtherSeries)
	}
	s.Forget("c") // shared its label: nothing of its own to delete
	s.Forget("a")
	if len(forgotten) != 1 || forgotten[0] != "a" {
		t.Fatalf("series deleted for %v, want a's only", forgotten)
	}
	if got := s.Label("d"); got != "d" {
		t.Fatalf("after a's removal the next endpoint's label = %s, want d", got)
	}
	gone := &Endpoint{ID: "b"}
	gone.Removed.Store(true)
	s.CountDeferral(gone, "breaker")
	s.CountDeferral(&Endpoint{ID: "d"}, "breaker")
	if n := testutil.CollectAndCount(deferrals); n != 1 {
		t.Fatalf("%d deferral series, want d's only (b was removed)", n)
	}
}

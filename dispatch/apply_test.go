package dispatch

import (
	"testing"

	"github.com/hookjet/hookjet/jetstream"
)

// Issue 24 row 2: the watch skips what the admin API applied already, and
// older revisions, and applies what is newer; a delete this process made
// keeps older puts out until the watch delivers it.
func TestAppliedRevsStale(t *testing.T) {
	put := func(rev uint64) *jetstream.EndpointRecord { return &jetstream.EndpointRecord{ID: "x", Revision: rev} }
	tests := []struct {
		name  string
		start map[string]appliedRev
		rec   *jetstream.EndpointRecord
		stale bool
		after appliedRev
		kept  bool
	}{
		{"first put", nil, put(3), false, appliedRev{rev: 3}, true},
		{"the revision the API applied", map[string]appliedRev{"x": {rev: 3}}, put(3), true, appliedRev{rev: 3}, true},
		{"an older revision", map[string]appliedRev{"x": {rev: 5}}, put(4), true, appliedRev{rev: 5}, true},
		{"a newer revision", map[string]appliedRev{"x": {rev: 5}}, put(6), false, appliedRev{rev: 6}, true},
		{"a put older than this process's delete", map[string]appliedRev{"x": {rev: 5, deleted: true}}, put(5), true, appliedRev{rev: 5, deleted: true}, true},
		{"created again after the delete", map[string]appliedRev{"x": {rev: 5, deleted: true}}, put(7), false, appliedRev{rev: 7}, true},
		{"the delete of this process arrives", map[string]appliedRev{"x": {rev: 5, deleted: true}}, nil, false, appliedRev{}, false},
		{"a delete of an unknown endpoint", nil, nil, false, appliedRev{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &appliedRevs{revs: map[string]appliedRev{}}
			for k, v := range tt.start {
				a.revs[k] = v
			}
			if got := a.stale(t.Context(), "x", tt.rec); got != tt.stale {
				t.Fatalf("stale = %v, want %v", got, tt.stale)
			}
			got, kept := a.revs["x"]
			if kept != tt.kept || got != tt.after {
				t.Fatalf("after: %+v (kept %v), want %+v (kept %v)", got, kept, tt.after, tt.kept)
			}
		})
	}
}

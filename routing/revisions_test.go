package routing

import (
	"context"
	"errors"
	"testing"
)

// The watch skips what the admin API applied already, and older revisions,
// and applies what is newer; a delete this process made keeps older puts
// out until the watch delivers it.
func TestRevisionsStale(t *testing.T) {
	tests := []struct {
		name  string
		start map[string]revision
		rev   uint64
		put   bool
		stale bool
		after revision
		kept  bool
	}{
		{"first put", nil, 3, true, false, revision{rev: 3}, true},
		{"the revision the API applied", map[string]revision{"x": {rev: 3}}, 3, true, true, revision{rev: 3}, true},
		{"an older revision", map[string]revision{"x": {rev: 5}}, 4, true, true, revision{rev: 5}, true},
		{"a newer revision", map[string]revision{"x": {rev: 5}}, 6, true, false, revision{rev: 6}, true},
		{"a put older than this process's delete", map[string]revision{"x": {rev: 5, deleted: true}}, 5, true, true, revision{rev: 5, deleted: true}, true},
		{"created again after the delete", map[string]revision{"x": {rev: 5, deleted: true}}, 7, true, false, revision{rev: 7}, true},
		{"the delete of this process arrives", map[string]revision{"x": {rev: 5, deleted: true}}, 0, false, false, revision{}, false},
		{"a delete of an unknown endpoint", nil, 0, false, false, revision{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Revisions{revs: map[string]revision{}}
			for k, v := range tt.start {
				r.revs[k] = v
			}
			if got := r.Stale(t.Context(), "x", tt.rev, tt.put); got != tt.stale {
				t.Fatalf("stale = %v, want %v", got, tt.stale)
			}
			got, kept := r.revs["x"]
			if kept != tt.kept || got != tt.after {
				t.Fatalf("after: %+v (kept %v), want %+v (kept %v)", got, kept, tt.after, tt.kept)
			}
		})
	}
}

// A delete the watch delivers without its revision, after this process
// applied a put: stale when the store holds the endpoint at that revision or
// a newer one (it was created again), applied when the store has none or an
// older one.
func TestRevisionsDeleteWithoutRevision(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stored uint64
		err    error
		stale  bool
	}{
		{"created again since", 9, nil, true},
		{"the revision applied", 5, nil, true},
		{"gone from the store", 0, errors.New("key not found"), false},
		{"an older one stored", 4, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var r Revisions
			asked := ""
			r.Use(func(_ context.Context, id string) (uint64, error) { asked = id; return tt.stored, tt.err })
			unlock := r.Hold()
			defer unlock()
			if !r.Watching() {
				t.Fatal("Watching after Use = false")
			}
			r.Applied("x", 5)
			if got := r.Stale(t.Context(), "x", 0, false); got != tt.stale {
				t.Fatalf("stale = %v, want %v", got, tt.stale)
			}
			if asked != "x" {
				t.Fatalf("the store was asked for %q, want x", asked)
			}
			if has := r.Has("x", 5); has != tt.stale {
				t.Fatalf("after the delete Has(x, 5) = %v, want %v (the revision is kept only when the delete is stale)", has, tt.stale)
			}
		})
	}
}

// Has answers for the revision applied and older ones; Deleted keeps a put
// of the deleted revision out.
func TestRevisionsHasAndDeleted(t *testing.T) {
	var r Revisions
	if r.Watching() {
		t.Fatal("a zero Revisions is watching")
	}
	r.Deleted("x", 3) // before Use: nothing recorded, no panic
	r.Use(func(context.Context, string) (uint64, error) { return 0, errors.New("unused") })
	r.Applied("x", 4)
	for rev, want := range map[uint64]bool{3: true, 4: true, 5: false} {
		if got := r.Has("x", rev); got != want {
			t.Errorf("Has(x, %d) = %v, want %v", rev, got, want)
		}
	}
	if r.Has("y", 1) {
		t.Error("Has of an unknown endpoint = true")
	}
	r.Deleted("x", 6)
	if !r.Stale(t.Context(), "x", 6, true) {
		t.Error("a put of the revision this process deleted is not stale")
	}
	if r.Stale(t.Context(), "x", 7, true) {
		t.Error("a put newer than this process's delete is stale")
	}
}

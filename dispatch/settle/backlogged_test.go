package settle

import (
	"slices"
	"testing"
)

// The set of endpoints with waiting tasks follows their backlogs: an
// endpoint joins as its backlog rises from zero (a stored task, a task
// stored again, tasks found on the server), a look passes over and drops
// those back at zero and those removed, and a rise after a drop brings it
// back.
func TestBacklogged(t *testing.T) {
	var set Backlogged
	look := func() map[string]int64 {
		out := map[string]int64{}
		set.Each(func(e *Endpoint, n int64) { out[e.ID] = n })
		return out
	}
	a, b, c := &Endpoint{ID: "a", Waiting: &set}, &Endpoint{ID: "b", Waiting: &set}, &Endpoint{ID: "c", Waiting: &set}
	a.Requeued(100, false)
	a.Requeued(100, false)
	b.Found(3)
	c.Requeued(100, true) // busy: not a backlog
	if got := look(); len(got) != 2 || got["a"] != 2 || got["b"] != 3 {
		t.Fatalf("look: %v, want a: 2, b: 3", got)
	}
	a.Consumed(100, false)
	a.Consumed(100, false)
	if got := look(); len(got) != 1 || got["b"] != 3 {
		t.Fatalf("a consumed its tasks: %v, want b: 3 alone", got)
	}
	var ids []string
	set.m.Range(func(id, _ any) bool { ids = append(ids, id.(string)); return true })
	if !slices.Equal(ids, []string{"b"}) {
		t.Fatalf("a look kept %v in the set, want only b", ids)
	}
	a.Requeued(100, false)
	if got := look(); got["a"] != 1 {
		t.Fatalf("a rose again: %v, want a: 1", got)
	}
	b.Removed.Store(true)
	if got := look(); len(got) != 1 || got["a"] != 1 {
		t.Fatalf("b removed: %v, want a: 1 alone", got)
	}
	var none *Backlogged
	none.join(a) // an endpoint without a set keeps nothing
}

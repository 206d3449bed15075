package routing

import (
	"fmt"
	"slices"
	"testing"
)

// TestIDSetAcrossItsThreshold adds ids past the slice's size, where the set
// becomes a map, and removes them again: every step holds exactly the ids
// added and not removed, each once.
func TestIDSetAcrossItsThreshold(t *testing.T) {
	var s idSet
	want := map[string]bool{}
	check := func(step string) {
		t.Helper()
		got := s.appendTo(nil)
		slices.Sort(got)
		var exp []string
		for id := range want {
			exp = append(exp, id)
		}
		slices.Sort(exp)
		if !slices.Equal(got, exp) || s.len() != len(exp) {
			t.Fatalf("%s: set holds %v (len %d), want %v", step, got, s.len(), exp)
		}
	}
	for i := range 3 * idSetFew {
		id := fmt.Sprintf("e%d", i)
		s.add(id)
		s.add(id) // twice: still once
		want[id] = true
		check("add " + id)
	}
	for i := 0; i < 3*idSetFew; i += 2 {
		id := fmt.Sprintf("e%d", i)
		s.remove(id)
		s.remove("never-added")
		delete(want, id)
		check("remove " + id)
	}
	var small idSet
	for _, id := range []string{"a", "b", "c"} {
		small.add(id)
	}
	for _, id := range []string{"b", "a", "c"} {
		small.remove(id)
	}
	if small.len() != 0 || small.few != nil {
		t.Fatalf("emptied set: len %d, slice %v", small.len(), small.few)
	}
}

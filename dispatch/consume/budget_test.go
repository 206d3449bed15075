package consume

import (
	"context"
	"testing"
	"time"
)

// Payload bytes held by deliveries in progress are bounded
// process-wide; one event larger than the budget still goes, alone.
func TestFanoutByteBudget(t *testing.T) {
	b := NewBudget(3 << 20)
	for range 3 {
		if !b.Acquire(t.Context(), 1<<20) {
			t.Fatal("refused within the budget")
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if b.Acquire(ctx, 1<<20) {
		t.Fatal("a fourth 1 MB event went past a 3 MB budget")
	}
	got := make(chan bool)
	go func() { got <- b.Acquire(t.Context(), 1<<20) }()
	b.Release(1 << 20)
	if !<-got {
		t.Fatal("not admitted after a release")
	}
	for range 3 {
		b.Release(1 << 20)
	}
	if !b.Acquire(t.Context(), 10<<20) {
		t.Fatal("an event larger than the whole budget never goes")
	}
}

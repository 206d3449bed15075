package memtrim

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// sink keeps the test's allocation on the heap until the test drops it.
var sink [][]byte

// TestReleaseAfterReturnsFreedHeap frees a large allocation and checks that
// ReleaseAfter hands it back to the operating system once its delay is up.
func TestReleaseAfterReturnsFreedHeap(t *testing.T) {
	held := func() uint64 {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapSys - ms.HeapReleased
	}
	sink = make([][]byte, 64)
	for i := range sink {
		sink[i] = make([]byte, 1<<20)
		sink[i][0] = byte(i)
	}
	before := held()
	sink = nil
	ReleaseAfter(context.Background(), time.Millisecond)
	if after := held(); after+32<<20 > before {
		t.Fatalf("heap held from the OS: %d MB before, %d MB after; want 32 MB or more returned", before>>20, after>>20)
	}
}

// TestReleaseAfterStopsWithItsContext checks that a cancelled context ends
// the wait at once.
func TestReleaseAfterStopsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan struct{})
	go func() {
		ReleaseAfter(ctx, time.Hour)
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ReleaseAfter waited past its context's end")
	}
}

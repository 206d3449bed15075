package breaker_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/internal/testkit"
)

// TestRemoveWhileFlushing: removing endpoints while Flush writes (a deleted
// API endpoint while the flush loop runs) is safe under the race detector,
// and the removed endpoints' records are gone after the last Flush.
func TestRemoveWhileFlushing(t *testing.T) {
	reg, err := breaker.NewRegistry(testkit.OpenDB(t, testkit.TempPath(t)))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		reg.Configure(fmt.Sprintf("ep%d", i), breaker.Settings{FailureThreshold: 1})
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 200 {
			if err := reg.Flush(); err != nil {
				t.Error(err)
				return
			}
		}
	})
	for i := range 200 {
		reg.Remove(fmt.Sprintf("ep%d", i))
	}
	wg.Wait()
	if err := reg.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, ok := reg.Health("ep7"); ok {
		t.Fatal("a removed endpoint still has a breaker")
	}
}

package webhook_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/webhook"
)

// A Store runs an effect once per id; a failed effect is retried. Replicas
// share webhook/kvdedupe or webhook/pgdedupe the same way; the in-memory
// Deduper serves one process.
func ExampleStore() {
	store := webhook.Counted(webhook.NewDeduper(0, 0), webhook.NewDedupeMetrics(prometheus.NewRegistry()), "memory")
	charge := func(fail bool) func(context.Context) error {
		return func(context.Context) error {
			if fail {
				return errors.New("card declined by a flaky upstream")
			}
			fmt.Println("charged")
			return nil
		}
	}
	ctx := context.Background()
	for _, fail := range []bool{true, false, false} { // the sender retries, then sends a copy
		dup, err := store.Once(ctx, "evt_1", charge(fail))
		fmt.Println("duplicate:", dup, "error:", err != nil)
	}
	// Output:
	// duplicate: false error: true
	// charged
	// duplicate: false error: false
	// duplicate: true error: false
}

package breaker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/state"
)

func ExampleRegistry() {
	dir, err := os.MkdirTemp("", "breaker-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = os.RemoveAll(dir) }()
	db, err := state.Open(filepath.Join(dir, "state.db"), time.Second)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() { _ = db.Close() }()

	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	reg, err := breaker.NewRegistry(db,
		breaker.WithClock(func() time.Time { return now }),
		breaker.WithOnTransition(func(tr breaker.Transition) {
			fmt.Printf("%s: %v -> %v (cooldown %v)\n", tr.Endpoint, tr.From, tr.To, tr.Cooldown)
		}))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg.Configure("crm", breaker.Settings{FailureThreshold: 2, Cooldown: time.Minute})

	// A delivery worker: ask, send, report.
	for range 3 {
		ok, wait := reg.Acquire("crm")
		if !ok {
			fmt.Println("deferred for", wait)
			continue
		}
		reg.Record("crm", breaker.Failure, 30*time.Millisecond, true)
	}
	now = now.Add(time.Minute)
	if ok, _ := reg.Acquire("crm"); ok {
		reg.Record("crm", breaker.Success, 20*time.Millisecond, false)
	}
	// Output:
	// crm: closed -> open (cooldown 1m0s)
	// deferred for 1m0s
	// crm: open -> half_open (cooldown 1m0s)
	// crm: half_open -> closed (cooldown 1m0s)
}

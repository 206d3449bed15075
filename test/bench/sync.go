package main

import (
	"context"
	"fmt"
)

// fastSync is the lazy nats.sync of the *fast scenarios: JetStream's own
// default interval, what hookjet ran with before nats.sync existed.
const fastSync = "2m"

// syncScenarios are healthy10 and floor with the embedded server syncing
// lazily (nats.sync: 2m) instead of fsyncing every message before its
// PubAck (nats.sync: always, the default the other scenarios use): the
// cost of durability, measured in the same run.
func (b *bench) syncScenarios(ctx context.Context) map[string][]runFunc {
	p := b.p
	return map[string][]runFunc{
		"healthy10fast": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "healthy10fast", sync: fastSync,
				description: fmt.Sprintf("healthy10 with nats.sync %s (acknowledged before fsync): 10 healthy endpoints, %d events, max_in_flight %d, worker.concurrency %d", fastSync, p.events, p.maxInFlight, p.concurrency),
				behave:      allHealthy(10), events: p.events, maxInFlight: p.maxInFlight, bound: p.bound})
		}},
		"floorfast": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "floorfast", floor: true, sync: fastSync,
				description: fmt.Sprintf("JetStream-only floor with sync_interval %s: %d events over 10 subjects, one durable consumer, ack; in-process connections, no HTTP", fastSync, p.events),
				behave:      allHealthy(10), events: p.events, bound: p.bound})
		}},
	}
}

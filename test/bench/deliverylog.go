package main

import (
	"context"
	"fmt"
)

// logScenarios measure the delivery log's cost: healthy10, healthy10fast
// and cost116 run with the log on (the default); these are the same with
// log.enabled: false.
// The targets: log-on throughput >= 90% of log-off at 10 endpoints,
// and log-on CPU <= 1.15x log-off at 116 events/s.
func (b *bench) logScenarios(ctx context.Context) map[string][]runFunc {
	p := b.p
	return map[string][]runFunc{
		"healthy10nolog": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "healthy10nolog", logOff: true,
				description: fmt.Sprintf("as healthy10 with the delivery log off (log.enabled: false): %d events, 10 healthy endpoints", p.events),
				behave:      allHealthy(10), events: p.events, maxInFlight: p.maxInFlight, bound: p.bound})
		}},
		"healthy10fastnolog": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "healthy10fastnolog", logOff: true, sync: fastSync,
				description: fmt.Sprintf("as healthy10fast (nats.sync %s) with the delivery log off: %d events, 10 healthy endpoints", fastSync, p.events),
				behave:      allHealthy(10), events: p.events, maxInFlight: p.maxInFlight, bound: p.bound})
		}},
		"cost116nolog": {func() (*result, error) {
			return b.outside(ctx, outsideSpec{name: "cost116nolog", logOff: true, endpoints: 10, rate: p.costRate, duration: p.costDuration, idle: p.idle,
				description: fmt.Sprintf("as cost116 with the delivery log off: 10 endpoints, %.0f events/s for %s, publisher and receiver outside", p.costRate, p.costDuration)})
		}},
	}
}

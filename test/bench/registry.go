package main

import (
	"context"
	"fmt"
)

// runFunc runs one measured scenario.
type runFunc func() (*result, error)

// scenarios maps each scenario name to what it runs, in order: most run one
// measurement, floor two (its throughput and its cost at 116 events/s).
func (b *bench) scenarios(ctx context.Context) map[string][]runFunc {
	runs := b.tenEndpointScenarios(ctx)
	for name, fn := range b.scaleScenarios(ctx) {
		runs[name] = fn
	}
	for name, fn := range b.syncScenarios(ctx) { // sync.go
		runs[name] = fn
	}
	for name, fn := range b.logScenarios(ctx) { // test/bench/deliverylog.go
		runs[name] = fn
	}
	for name, fn := range b.inboundScenarios(ctx) { // test/bench/inbound.go
		runs[name] = fn
	}
	for name, fn := range b.startupScenarios(ctx) { // test/bench/startup.go
		runs[name] = fn
	}
	runs["cluster3"] = b.cluster3(ctx)
	for name, fn := range b.isolationScenarios(ctx) {
		runs[name] = fn
	}
	for name, fn := range b.burstScenarios(ctx) { // test/bench/burst.go
		runs[name] = fn
	}
	for name, fn := range b.orderedScenarios(ctx) { // test/bench/ordered.go
		runs[name] = fn
	}
	for name, fn := range b.historyScenarios(ctx) { // test/bench/history.go
		runs[name] = fn
	}
	for name, fn := range b.publishScenarios(ctx) { // test/bench/publish.go
		runs[name] = fn
	}
	for name, fn := range b.eventScenarios(ctx) { // test/bench/events.go
		runs[name] = fn
	}
	for name, fn := range b.shapeScenarios(ctx) { // test/bench/shape.go
		runs[name] = fn
	}
	for name, fn := range b.destinationScenarios(ctx) { // test/bench/destinations.go
		runs[name] = fn
	}
	for name, fn := range b.validateScenarios(ctx) { // test/bench/validate.go
		runs[name] = fn
	}
	return runs
}

// tenEndpointScenarios are the raw ceiling and the scenarios with 10
// endpoints.
func (b *bench) tenEndpointScenarios(ctx context.Context) map[string][]runFunc {
	p := b.p
	deadExtra := func(i int) string {
		if i == 0 {
			return "    timeout: " + p.deadTimeout + "\n"
		}
		return ""
	}
	withFirst := func(kind behaviour) []behaviour {
		bs := allHealthy(10)
		bs[0] = kind
		return bs
	}
	ten := func(name, description string, behave []behaviour, extra func(int) string) []runFunc {
		return []runFunc{func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: name, description: description, behave: behave,
				events: p.events, maxInFlight: p.maxInFlight, bound: p.bound, extra: extra})
		}}
	}
	paced := func(s pacedSpec) []runFunc {
		return []runFunc{func() (*result, error) { return b.paced(ctx, s) }}
	}
	return map[string][]runFunc{
		"raw": {func() (*result, error) { return b.raw(ctx) }},
		"healthy10": ten("healthy10",
			fmt.Sprintf("10 healthy endpoints, %d events (one endpoint each), max_in_flight %d, worker.concurrency %d", p.events, p.maxInFlight, p.concurrency),
			allHealthy(10), nil),
		"slow10": ten("slow10",
			fmt.Sprintf("10 endpoints, e0 answers after %s; rate of the 9 healthy ones", slowDelay), withFirst(slow), nil),
		"dead10": ten("dead10",
			fmt.Sprintf("10 endpoints, e0 never answers (timeout %s); rate of the 9 healthy ones", p.deadTimeout), withFirst(dead), deadExtra),
		"floor": {
			func() (*result, error) {
				return b.throughput(ctx, throughputSpec{name: "floor", floor: true,
					description: fmt.Sprintf("JetStream-only floor (sync always): %d events over 10 subjects, one durable consumer, ack; in-process connections, no HTTP", p.events),
					behave:      allHealthy(10), events: p.events, bound: p.bound})
			},
			func() (*result, error) {
				return b.outside(ctx, outsideSpec{name: "floor116", floor: true, endpoints: 10, rate: p.costRate, duration: p.costDuration, idle: p.idle,
					description: fmt.Sprintf("JetStream-only floor at %.0f events/s for %s, publisher in an outside process; CPU of the server and the consumer", p.costRate, p.costDuration)})
			},
		},
		"latency": paced(pacedSpec{name: "latency", endpoints: 10, rate: p.latencyRate, duration: p.latencyDuration,
			description: fmt.Sprintf("10 endpoints, fixed offered rate %.0f events/s for %s", p.latencyRate, p.latencyDuration)}),
		"cost": paced(pacedSpec{name: "cost", endpoints: 10, rate: p.costRate, duration: p.costDuration, idle: p.idle,
			description: fmt.Sprintf("10 endpoints, %.0f events/s (10 million a day) for %s", p.costRate, p.costDuration)}),
		"cost116": {func() (*result, error) {
			return b.outside(ctx, outsideSpec{name: "cost116", endpoints: 10, rate: p.costRate, duration: p.costDuration, idle: p.idle,
				description: fmt.Sprintf("10 endpoints, %.0f events/s for %s; publisher and receiver in an outside process, CPU of hookjet with its embedded NATS only", p.costRate, p.costDuration)})
		}},
	}
}

// scaleScenarios are those with 1,000 to 100,000 endpoints.
func (b *bench) scaleScenarios(ctx context.Context) map[string][]runFunc {
	p := b.p
	tenthDead := make([]behaviour, 1000)
	for i := 0; i < len(tenthDead); i += 10 {
		tenthDead[i] = unavailable
		if i%20 == 0 {
			tenthDead[i] = refused
		}
	}
	return map[string][]runFunc{
		"endpoints1000": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "endpoints1000",
				description: fmt.Sprintf("1,000 healthy endpoints, max_in_flight %d, %d events round-robin", p.maxInFlight1000, p.events1000),
				behave:      allHealthy(1000), events: p.events1000, maxInFlight: p.maxInFlight1000, bound: p.bound1000, idle: p.idle})
		}},
		"endpoints10000": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "endpoints10000", configured: 10000,
				description: fmt.Sprintf("10,000 endpoints configured, 1,000 active: %d events round-robin over them, max_in_flight %d", p.events1000, p.maxInFlight1000),
				behave:      allHealthy(1000), events: p.events1000, maxInFlight: p.maxInFlight1000, bound: p.bound1000, idle: p.idle})
		}},
		"dead1000": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "dead1000",
				description: fmt.Sprintf("1,000 active endpoints, every 10th dead (half connection refused, half always 503), %d events round-robin, max_in_flight %d; rate of the 900 healthy ones", p.events1000, p.maxInFlight1000),
				behave:      tenthDead, events: p.events1000, maxInFlight: p.maxInFlight1000, bound: p.bound1000})
		}},
		"endpoints100000": {func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: "endpoints100000", configured: 100000,
				description: fmt.Sprintf("100,000 endpoints configured (one event type each), idle for %s, then %d events to 10 of them", p.scaleIdle, p.events),
				behave:      allHealthy(10), events: p.events, maxInFlight: p.maxInFlight, bound: p.bound, idle: p.scaleIdle})
		}},
		"apicreate10000": {func() (*result, error) { return b.apiCreate(ctx, "apicreate10000", p.apiEndpoints) }},
		"backlog20000":   {func() (*result, error) { return b.backlog(ctx, "backlog20000", p.backlogEvents) }},
	}
}

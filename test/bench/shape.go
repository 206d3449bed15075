package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The filters and transform scenarios (issue 49): each runs its baseline
// first, then the same endpoints with a filter or a transform, in the same
// run, so that the ratio compares like with like on a shared machine.

// benchTransform is the 10-line script of the transform scenario. The
// harness's payload is not JSON (its fixed-width prefix), so it reaches the
// script as a string: the script parses its "data" object, reads it and
// sets headers, and returns the payload as it came (the receiver reads the
// prefix and verifies the signature over what it got).
const benchTransform = `function handler(webhook) {
  var p = webhook.payload;
  var data = JSON.parse(p.slice(p.indexOf('"data":') + 7, p.length - 1));
  var qty = 0;
  for (var i = 0; i < data.lines.length; i++) { qty += data.lines[i].qty; }
  webhook.headers["X-Bench-Amount"] = (data.amount_cents / 100).toFixed(2) + " " + data.currency.toUpperCase();
  webhook.headers["X-Bench-Quantity"] = String(qty);
  webhook.headers["X-Bench-Kind"] = webhook.eventType.split(".").pop();
  return webhook;
}`

// filterYAML is endpoint i's filter line: its own event type.
func filterYAML(i int) string {
	return fmt.Sprintf("    filter: 'type == %s'\n", strconv.Quote(eventType(i)))
}

// transformYAML is an endpoint's benchTransform, as a YAML block.
var transformYAML = "    transform: |\n      " + strings.ReplaceAll(benchTransform, "\n", "\n      ") + "\n"

// shapeEvents are the events of each filters and transform run.
func (p params) shapeEvents() int {
	if p.quick {
		return 5000
	}
	return 20000
}

// shapeScenarios are "filters" and "transform".
func (b *bench) shapeScenarios(ctx context.Context) map[string][]runFunc {
	p := b.p
	events := p.shapeEvents()
	bound := 45 * time.Second
	filters := func(name string, filtered bool) runFunc {
		what := "no filters"
		var extra func(int) string
		if filtered {
			what = `each of the 1,000 active endpoints with the filter type == "bench.e<i>" (its own type: every event passes)`
			extra = func(i int) string {
				if i >= 1000 {
					return ""
				}
				return filterYAML(i)
			}
		}
		return func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: name, configured: 10000, extra: extra,
				description: fmt.Sprintf("10,000 endpoints configured, 1,000 active, %s: %d events round-robin, max_in_flight %d", what, events, p.maxInFlight1000),
				behave:      allHealthy(1000), events: events, maxInFlight: p.maxInFlight1000, bound: bound})
		}
	}
	transform := func(name string, script bool) runFunc {
		what := "no transform"
		var extra func(int) string
		if script {
			what = "each with a 10-line transform (parses the payload's data, sets three headers)"
			extra = func(int) string { return transformYAML }
		}
		return func() (*result, error) {
			return b.throughput(ctx, throughputSpec{name: name, extra: extra,
				description: fmt.Sprintf("10 healthy endpoints, %s: %d events, max_in_flight %d", what, events, p.maxInFlight),
				behave:      allHealthy(10), events: events, maxInFlight: p.maxInFlight, bound: bound})
		}
	}
	return map[string][]runFunc{
		"filters":   {filters("filters0", false), filters("filters", true)},
		"transform": {transform("transform0", false), transform("transform", true)},
	}
}

// shapeTargets are the filters and transform targets: the rate against the
// baseline of the same run, and the CPU each evaluation or run adds.
func shapeTargets(get func(string) *result) []target {
	cs := []check{
		ratioCheck("filters: 10,000 endpoints, the 1,000 active ones filtering on the event's type, vs without filters", ">= 80%", 80,
			get("filters"), get("filters0"), "filters", func(r *result) float64 { return r.PerSecond }),
		ratioCheck("transform: 10 endpoints with a 10-line script vs without", ">= 50%", 50,
			get("transform"), get("transform0"), "transform", func(r *result) float64 { return r.PerSecond }),
	}
	// One evaluation per delivery (each event passes one endpoint's
	// filter), one run per delivery: the CPU per delivery they add.
	cs[0].detail += addedCPU(get("filters"), get("filters0"), "evaluation")
	cs[1].detail += addedCPU(get("transform"), get("transform0"), "run")
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}

// addedCPU says how much CPU (whole process) r used per delivery more than
// base, as the cost of one what.
func addedCPU(r, base *result, what string) string {
	if r == nil || base == nil || r.CPUSecondsPer1000 == 0 {
		return ""
	}
	us := (r.CPUSecondsPer1000 - base.CPUSecondsPer1000) * 1000
	return fmt.Sprintf("; CPU per delivery %.0f µs vs %.0f µs: %.0f µs per %s (whole process, noisy on a shared machine)",
		r.CPUSecondsPer1000*1e3, base.CPUSecondsPer1000*1e3, us, what)
}

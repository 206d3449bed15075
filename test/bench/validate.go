package main

import (
	"context"
	"fmt"
)

// The cost of checking payloads against the catalogue on the HTTP publish
// path: the same 64 clients of POST /api/v1/events, each event of type
// bench.created with the 500 B payload of the publish scenario, against a
// hookjet with catalog.validate off and one with enforce, in the same run
// (alternating rounds, see validateScenarios), with nats.sync lazy so that
// hookjet's CPU rather than the disk's fsync bounds the rate.

// validateModes are the modes compared; the first is the base.
var validateModes = []string{"off", "enforce"}

// validateCatalog is the catalog section of the validate scenario's
// hookjet: bench.created's schema, which every payload of
// publishSender satisfies.
const validateCatalog = `catalog:
  validate: %s
  event_types:
    - name: bench.created
      schema:
        type: object
        required: [id, action, pad]
        additionalProperties: false
        properties:
          id: {type: string, minLength: 1}
          action: {enum: [opened, closed]}
          pad: {type: string, maxLength: 1000}
`

// validateName names a run of the validate scenario.
func validateName(mode string) string { return "publish_http_validate_" + mode }

// validateRounds is how many times each mode runs, alternating; the
// fastest run of each counts (the machine is shared: a neighbour's burst
// during one run says nothing of validation's cost).
const validateRounds = 3

// validateScenarios is the "validate" scenario: both hookjets started
// first, then validateRounds runs of each mode, alternating, the fastest
// of each kept. The first run function does the work; the second hands
// over the enforce result.
func (b *bench) validateScenarios(ctx context.Context) map[string][]runFunc {
	best := map[string]*result{}
	measure := func() (*result, error) {
		hs := map[string]*instance{}
		defer func() {
			for _, h := range hs {
				h.stop()
			}
		}()
		for _, mode := range validateModes {
			h, err := startHookjet(ctx, hookjetSpec{maxInFlight: 16, concurrency: 16, sync: fastSync, top: fmt.Sprintf(validateCatalog, mode)}, b.logOut)
			if err != nil {
				return nil, err
			}
			hs[mode] = h
		}
		for round := range validateRounds {
			for _, mode := range validateModes {
				r, err := b.publishRun(ctx, hs[mode], "http", fastSync, 64, 0)
				if err != nil {
					return nil, err
				}
				r.Name = validateName(mode)
				r.Description = fmt.Sprintf("POST /api/v1/events with catalog.validate %s (bench.created's schema: an object of three checked properties), nats.sync lazy: 64 clients for %s, each sending a unique 500 B event and waiting until it is stored; the fastest of %d runs alternating with the other mode", mode, b.p.rawDuration, validateRounds)
				b.say("%s round %d: %.0f events/s", r.Name, round+1, r.PerSecond)
				if cur := best[mode]; cur == nil || r.PerSecond > cur.PerSecond {
					best[mode] = r
				}
			}
		}
		return best[validateModes[0]], nil
	}
	rest := func() (*result, error) {
		if r := best[validateModes[1]]; r != nil {
			return r, nil
		}
		return nil, fmt.Errorf("%s: no run", validateName(validateModes[1]))
	}
	return map[string][]runFunc{"validate": {measure, rest}}
}

// validateTargets is the HTTP publish rate with enforce against off.
func validateTargets(get func(string) *result) []target {
	c := ratioCheck("publish, HTTP, 64 clients, nats.sync lazy: events/s with catalog.validate enforce vs off", ">= 90%", 90,
		get(validateName("enforce")), get(validateName("off")), "validate", func(r *result) float64 { return r.PerSecond })
	return []target{c.target()}
}

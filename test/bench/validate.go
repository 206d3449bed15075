package main

import (
	"context"
	"fmt"
)

// The cost of checking payloads against the catalogue on the HTTP publish
// path: the same 64 clients of POST /api/v1/events, each event of type
// bench.created with the 500 B payload of the publish scenario, against a
// hookjet with catalog.validate off and one with enforce (each started
// fresh, one after the other in the same run), with nats.sync lazy so that
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

// validateScenarios is the "validate" scenario: one run per mode.
func (b *bench) validateScenarios(ctx context.Context) map[string][]runFunc {
	var runs []runFunc
	for _, mode := range validateModes {
		runs = append(runs, func() (*result, error) {
			h, err := startHookjet(ctx, hookjetSpec{maxInFlight: 16, concurrency: 16, sync: fastSync, top: fmt.Sprintf(validateCatalog, mode)}, b.logOut)
			if err != nil {
				return nil, err
			}
			defer h.stop()
			r, err := b.publishRun(ctx, h, "http", fastSync, 64, 0)
			if r != nil {
				r.Name = validateName(mode)
				r.Description = fmt.Sprintf("POST /api/v1/events with catalog.validate %s (bench.created's schema: an object of three checked properties), nats.sync lazy: 64 clients for %s, each sending a unique 500 B event and waiting until it is stored", mode, b.p.rawDuration)
				b.say("%s: %.0f events/s", r.Name, r.PerSecond)
			}
			return r, err
		})
	}
	return map[string][]runFunc{"validate": runs}
}

// validateTargets is the HTTP publish rate with enforce against off.
func validateTargets(get func(string) *result) []target {
	c := ratioCheck("publish, HTTP, 64 clients, nats.sync lazy: events/s with catalog.validate enforce vs off", ">= 90%", 90,
		get(validateName("enforce")), get(validateName("off")), "validate", func(r *result) float64 { return r.PerSecond })
	return []target{c.target()}
}

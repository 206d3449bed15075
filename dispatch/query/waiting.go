package query

import (
	"context"
	"slices"
	"strings"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
)

// Why an endpoint's deliveries wait: the engine's facts about it (state,
// limiter, slots, deliveries taken before it started), the breaker's and
// the ordered lane's, turned into reasons by api.Waits, the one place that
// decides them.

// waitFacts gathers what is known of e: h its breaker's health when
// hasBreaker, held its ordering keys held in the ordered lane. The
// endpoint's status adds its retries (status.go).
func waitFacts(e Endpoint, h breaker.Health, hasBreaker bool, held *api.HeldKeys) api.WaitFacts {
	f := api.WaitFacts{
		Disabled: e.Disabled, DisabledReason: e.DisabledReason,
		HoldUntil: e.HoldUntil, HoldCause: e.HoldCause,
		HeldKeys: held,
	}
	if hasBreaker {
		f.BreakerOpen, f.BreakerHalfOpen = h.State == breaker.Open, h.State == breaker.HalfOpen
		f.BreakerOpenUntil, f.ConsecutiveFailures = h.OpenUntil, h.ConsecutiveFailures
	}
	f.RateLimit, f.Tokens = e.RateLimit, e.Tokens
	f.MaxInFlight, f.InFlight = e.Config.MaxInFlight, e.InFlight
	f.Taken, f.TakenUntil = e.Taken, e.TakenUntil
	return f
}

// Waiting lists why deliveries wait, for every endpoint of this process
// that cannot take them now, by id: those of at most api.MaxWaiting
// endpoints, and how many endpoints there are.
func (q *Queries) Waiting(ctx context.Context) ([]api.Wait, int, error) {
	lane := q.src.Lane(ctx, nil)
	now := q.now()
	_, halfOpen, open := q.breakers.States()
	breakers := halfOpen+open > 0 // else no breaker needs a look
	var waiting [][]api.Wait
	q.src.Each(now, func(e Endpoint) {
		var h breaker.Health
		ok := false
		if breakers {
			h, ok = q.breakers.Health(e.Config.ID)
		}
		if w := api.Waits(e.Config.ID, waitFacts(e, h, ok, lane[e.Config.ID].Held), now); len(w) > 0 {
			waiting = append(waiting, w)
		}
	})
	slices.SortFunc(waiting, func(a, b []api.Wait) int { return strings.Compare(a[0].Endpoint, b[0].Endpoint) })
	var out []api.Wait
	for _, w := range waiting[:min(len(waiting), api.MaxWaiting)] {
		out = append(out, w...)
	}
	return out, len(waiting), nil
}

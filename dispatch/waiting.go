package dispatch

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
)

// Why an endpoint's deliveries wait: this process's facts about it
// (state, breaker, limiter, slots, deliveries taken before it started),
// turned into reasons by api.Waits, the one place that decides them.

// waitsOf says why deliveries to e wait at now, and until when (nil: they
// go at once), looking at the breaker only when breakers is set; held are
// e's ordering keys held in the ordered lane. The endpoint's view adds its
// retries (status.go).
func (d *Dispatcher) waitsOf(e *endpoint, now time.Time, breakers bool, held *api.HeldKeys) []api.Wait {
	return api.Waits(e.id, d.waitFacts(e, now, breakers, held), now)
}

// waitFacts gathers what this process knows about e at now, and held.
func (d *Dispatcher) waitFacts(e *endpoint, now time.Time, breakers bool, held *api.HeldKeys) api.WaitFacts {
	st := d.state(e.id)
	f := api.WaitFacts{
		Disabled: st.Disabled, DisabledReason: st.Reason,
		HoldUntil: st.HoldUntil, HoldCause: st.HoldCause,
		HeldKeys: held,
	}
	if breakers {
		if h, ok := d.o.Breakers.Health(e.id); ok {
			f.BreakerOpen, f.BreakerHalfOpen = h.State == breaker.Open, h.State == breaker.HalfOpen
			f.BreakerOpenUntil, f.ConsecutiveFailures = h.OpenUntil, h.ConsecutiveFailures
		}
	}
	s := e.set.Load()
	if s.limiter != nil {
		f.RateLimit, f.Tokens = float64(s.limiter.Limit()), s.limiter.TokensAt(now)
	}
	f.MaxInFlight, f.InFlight = s.ep.MaxInFlight, e.slots.inUse()
	f.Taken, f.TakenUntil = d.drains.TakenWait(e.id, now)
	return f
}

// Waiting lists why deliveries wait, for every endpoint of this process
// that cannot take them now, by id: those of at most api.MaxWaiting
// endpoints, and how many endpoints there are.
func (d *Dispatcher) Waiting(ctx context.Context) ([]api.Wait, int, error) {
	lane := d.laneViews(ctx, nil)
	now := d.now()
	_, halfOpen, open := d.o.Breakers.States()
	breakers := halfOpen+open > 0 // else no breaker needs a look
	d.mu.RLock()
	eps := make([]*endpoint, 0, len(d.eps))
	for _, e := range d.eps {
		eps = append(eps, e)
	}
	d.mu.RUnlock()
	var waiting [][]api.Wait
	for _, e := range eps {
		if w := d.waitsOf(e, now, breakers, lane[e.id].Held); len(w) > 0 {
			waiting = append(waiting, w)
		}
	}
	slices.SortFunc(waiting, func(a, b []api.Wait) int { return strings.Compare(a[0].Endpoint, b[0].Endpoint) })
	var out []api.Wait
	for _, w := range waiting[:min(len(waiting), api.MaxWaiting)] {
		out = append(out, w...)
	}
	return out, len(waiting), nil
}

package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/jetstream"
)

// Breaker reset: an operator closes an endpoint's breaker by hand
// and its waiting deliveries go at once, in every process. The breaker is
// per process (state.db), so the process that answers closes its own and
// publishes hookjet.ops.endpoint.reset; every process subscribes to it
// (WatchResets) and closes its own. A Retry-After hold, shared through
// HOOKJET_ENDPOINT_STATE, is lifted there, which every process watches.

// resetKind is the operational event of a breaker reset.
const resetKind = "endpoint.reset"

// resetNotice is the body of hookjet.ops.endpoint.reset.
type resetNotice struct {
	Endpoint string `json:"endpoint"`
	Origin   string `json:"origin"` // the process that published it, which has reset already
}

// resets is a dispatcher's part in breaker resets.
type resets struct {
	once   sync.Once
	origin string // names this dispatcher in the notices it publishes
}

// self returns d's origin, made on first use.
func (d *Dispatcher) self() string {
	d.resets.once.Do(func() { d.resets.origin = nuid.Next() })
	return d.resets.origin
}

// ResetBreaker closes endpoint id's breaker and lifts a receiver's
// Retry-After hold, in this process before it returns and in every other
// process within the latency of a NATS message; its parked deliveries drain
// at once. A disabled endpoint stays disabled (SetDisabled enables it).
func (d *Dispatcher) ResetBreaker(ctx context.Context, id string) error {
	if d.endpoint(id) == nil {
		return fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	err := d.updateState(ctx, id, func(s *endpointState) bool {
		if s.HoldUntil.IsZero() {
			return false
		}
		s.HoldUntil, s.HoldCause = time.Time{}, ""
		return true
	})
	if err != nil {
		return err
	}
	d.resetLocal(id)
	b, _ := json.Marshal(resetNotice{Endpoint: id, Origin: d.self()})
	if err := d.o.NC.Publish(jetstream.OpsPrefix+resetKind, b); err != nil {
		return fmt.Errorf("tell the other processes: %w", err)
	}
	if err := d.o.NC.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("tell the other processes: %w", err)
	}
	d.log.Info("breaker reset by an operator", "endpoint", id)
	return nil
}

// resetLocal closes this process's breaker of id and starts its drain now.
func (d *Dispatcher) resetLocal(id string) {
	if d.endpoint(id) == nil {
		return
	}
	d.o.Breakers.Reset(id) // a transition publishes hookjet.ops.endpoint.closed
	d.drains.note(id, time.Time{})
}

// WatchResets applies the breaker resets other processes publish, until
// Stop. Call it once, after Start.
func (d *Dispatcher) WatchResets() error {
	sub, err := d.o.NC.Subscribe(jetstream.OpsPrefix+resetKind, func(m *nats.Msg) {
		var n resetNotice
		if json.Unmarshal(m.Data, &n) != nil || n.Origin == d.self() {
			return
		}
		d.resetLocal(n.Endpoint)
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", jetstream.OpsPrefix+resetKind, err)
	}
	context.AfterFunc(d.loopCtx, func() { _ = sub.Unsubscribe() })
	return nil
}

// waits says why deliveries to e wait at now, and until when (nil: they go
// at once). The admin API shows it in the endpoint's "waiting".
func (d *Dispatcher) waits(e *endpoint, now time.Time) []api.Wait { return d.waitsOf(e, now, true) }

// waitsOf is waits, looking at the breaker only when breakers is set.
func (d *Dispatcher) waitsOf(e *endpoint, now time.Time, breakers bool) []api.Wait {
	var out []api.Wait
	add := func(reason string, until time.Time, detail string) {
		out = append(out, api.Wait{Endpoint: e.id, Reason: reason, Until: timePtr(until), Detail: detail})
	}
	st := d.state(e.id)
	if st.Disabled {
		add(api.WaitDisabled, time.Time{}, st.Reason)
	}
	if st.HoldUntil.After(now) {
		add(api.WaitHeld, st.HoldUntil, st.HoldCause)
	}
	if breakers {
		d.breakerWait(e.id, add)
	}
	s := e.set.Load()
	if s.limiter != nil {
		if tokens := s.limiter.TokensAt(now); tokens < 1 {
			wait := time.Duration((1 - tokens) / float64(s.limiter.Limit()) * float64(time.Second))
			add(api.WaitRateLimited, now.Add(wait), fmt.Sprintf("rate_limit.rps %g", float64(s.limiter.Limit())))
		}
	}
	if limit := s.ep.MaxInFlight; limit > 0 && e.slots.inUse() >= limit {
		add(api.WaitInFlightFull, time.Time{}, fmt.Sprintf("max_in_flight %d", limit))
	}
	if n, until := d.drains.takenWait(e.id, now); n > 0 {
		add(api.WaitTaken, until, fmt.Sprintf("%d taken before this process started", n))
	}
	return out
}

// breakerWait adds why id's breaker holds deliveries back, if it does.
func (d *Dispatcher) breakerWait(id string, add func(reason string, until time.Time, detail string)) {
	h, ok := d.o.Breakers.Health(id)
	if !ok {
		return
	}
	switch h.State {
	case breaker.Open:
		add(api.WaitBreakerOpen, h.OpenUntil, fmt.Sprintf("%d consecutive failures; then one probe request", h.ConsecutiveFailures))
	case breaker.HalfOpen:
		add(api.WaitHalfOpen, time.Time{}, "one probe request at a time until one succeeds")
	case breaker.Closed:
	}
}

// Waiting lists why deliveries wait, for every endpoint of this process
// that cannot take them now, by id: those of at most api.MaxWaiting
// endpoints, and how many endpoints there are.
func (d *Dispatcher) Waiting(_ context.Context) ([]api.Wait, int, error) {
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
		if w := d.waitsOf(e, now, breakers); len(w) > 0 {
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

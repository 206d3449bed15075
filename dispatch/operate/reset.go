package operate

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/dispatch/epstate"
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

// self returns this process's origin, made on first use.
func (o *Operator) self() string {
	o.resets.once.Do(func() { o.resets.origin = nuid.Next() })
	return o.resets.origin
}

// ResetBreaker closes endpoint id's breaker and lifts a receiver's
// Retry-After hold, in this process before it returns and in every other
// process within the latency of a NATS message; its parked deliveries drain
// at once. A disabled endpoint stays disabled (SetDisabled enables it).
func (o *Operator) ResetBreaker(ctx context.Context, id string) error {
	if o.eps.Config(id) == nil {
		return fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	err := o.states.Update(ctx, id, func(s *epstate.State) bool {
		if s.HoldUntil.IsZero() {
			return false
		}
		s.HoldUntil, s.HoldCause = time.Time{}, ""
		return true
	})
	if err != nil {
		return err
	}
	o.resetLocal(id)
	b, _ := json.Marshal(resetNotice{Endpoint: id, Origin: o.self()})
	if err := o.nc.Publish(jetstream.OpsPrefix+resetKind, b); err != nil {
		return fmt.Errorf("tell the other processes: %w", err)
	}
	if err := o.nc.FlushWithContext(ctx); err != nil {
		return fmt.Errorf("tell the other processes: %w", err)
	}
	o.log.Info("breaker reset by an operator", "endpoint", id)
	return nil
}

// resetLocal closes this process's breaker of id and starts its drain now.
func (o *Operator) resetLocal(id string) {
	if o.eps.Config(id) == nil {
		return
	}
	o.breakers.Reset(id) // a transition publishes hookjet.ops.endpoint.closed
	o.wake(id)
}

// WatchResets applies the breaker resets other processes publish, until
// Stop. Call it once, after Start.
func (o *Operator) WatchResets() error {
	sub, err := o.nc.Subscribe(jetstream.OpsPrefix+resetKind, func(m *nats.Msg) {
		var n resetNotice
		if json.Unmarshal(m.Data, &n) != nil || n.Origin == o.self() {
			return
		}
		o.resetLocal(n.Endpoint)
	})
	if err != nil {
		return fmt.Errorf("subscribe %s: %w", jetstream.OpsPrefix+resetKind, err)
	}
	context.AfterFunc(o.done, func() { _ = sub.Unsubscribe() })
	return nil
}

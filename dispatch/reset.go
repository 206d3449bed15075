package dispatch

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/hookjet/hookjet/api"
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
	d.drains.Note(id, time.Time{})
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

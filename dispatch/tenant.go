package dispatch

import (
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/dispatch/settle"
)

// rejectBadTenant settles an event whose Hookjet-Tenant header is not a
// tenant (ev.BadTenant says why). It is delivered to no one: whose event it
// is cannot be known, and taking it for an event without a tenant would
// not do either. targets are the endpoints without a tenant whose patterns
// match it (the operator's own): each gets it as a dead letter with reason
// "rejected" and the reason as its last error, where the operator sees
// it. The event is acked once every copy is stored, and comes back when
// one is not.
func (d *fanout) rejectBadTenant(msg natsjs.Msg, ev *settle.Event, targets []target) {
	ok := true
	for _, t := range targets {
		if t.e == nil {
			continue
		}
		dl := newDelivery(t.e, t.s, ev, settle.State{Error: ev.BadTenant}, msg.Data(), msg.Headers())
		dl.Done = func(stored bool) { ok = ok && stored }
		if d.alreadyDelivered(dl) {
			continue
		}
		d.settle.deadLetter(dl, "rejected")
	}
	if len(targets) == 0 {
		d.log.Warn("event delivered to no endpoint: its tenant header is not valid, and no endpoint without a tenant matches it",
			"event_id", ev.ID, "event_type", ev.Type, "reason", ev.BadTenant)
	}
	var err error
	if ok {
		err = msg.Ack()
	} else {
		err = msg.Nak()
	}
	if err != nil {
		d.log.Warn("settle event with a bad tenant", "event_id", ev.ID, "err", err)
	}
}

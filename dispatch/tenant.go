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
	d.reject(msg, ev, targets, "rejected", ev.BadTenant)
}

// reject dead-letters an event to each of targets with reason and why as
// its last error, delivering it to none of them, and acks it once every
// copy is stored (naks it when one is not): an event whose tenant header
// is not a tenant (rejected), or that the catalogue refuses (invalid).
func (d *fanout) reject(msg natsjs.Msg, ev *settle.Event, targets []target, reason, why string) {
	ok := true
	for _, t := range targets {
		if t.e == nil {
			continue
		}
		dl := newDelivery(t.e, t.s, ev, settle.State{Error: why}, msg.Data(), msg.Headers())
		dl.Done = func(stored bool) { ok = ok && stored }
		if d.alreadyDelivered(dl) {
			continue
		}
		d.settle.deadLetter(dl, reason)
	}
	if len(targets) == 0 && reason == "rejected" {
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
		d.log.Warn("settle a refused event", "event_id", ev.ID, "reason", reason, "err", err)
	}
}

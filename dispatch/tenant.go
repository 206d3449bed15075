package dispatch

import (
	"strconv"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// rejectBadTenant settles an event whose Hookjet-Tenant header is not a
// tenant (ev.badTenant says why). It is delivered to no one: whose event it
// is cannot be known, and taking it for an event without a tenant would
// not do either. targets are the endpoints without a tenant whose patterns
// match it (the operator's own): each gets it as a dead letter with reason
// "rejected" and the reason as its last error, where the operator sees
// it. The event is acked once every copy is stored, and comes back when
// one is not.
func (d *fanout) rejectBadTenant(msg natsjs.Msg, ev *event, targets []string) {
	d.reject(msg, ev, targets, "rejected", ev.badTenant)
}

// reject dead-letters an event to each of targets with reason and why as
// its last error, delivering it to none of them, and acks it once every
// copy is stored (naks it when one is not): an event whose tenant header
// is not a tenant (rejected), or that the catalogue refuses (invalid).
func (d *fanout) reject(msg natsjs.Msg, ev *event, targets []string, reason, why string) {
	ok := true
	for _, id := range targets {
		e := d.eps.endpoint(id)
		if e == nil {
			continue
		}
		dl := &delivery{e: e, s: d.eps.current(e), ev: ev, data: msg.Data(), hdr: msg.Headers(), st: attemptState{Error: why}}
		dl.done = func(stored bool) { ok = ok && stored }
		if d.alreadyDelivered(dl) {
			continue
		}
		d.settle.deadLetter(dl, reason)
	}
	if len(targets) == 0 && reason == "rejected" {
		d.log.Warn("event delivered to no endpoint: its tenant header is not valid, and no endpoint without a tenant matches it",
			"event_id", ev.id, "event_type", ev.typ, "reason", ev.badTenant)
	}
	var err error
	if ok {
		err = msg.Ack()
	} else {
		err = msg.Nak()
	}
	if err != nil {
		d.log.Warn("settle a refused event", "event_id", ev.id, "reason", reason, "err", err)
	}
}

// incarnationOf is the incarnation (Hookjet-Endpoint-Created) of dl's
// endpoint: its settings' created_at; for the safety net's deliveries,
// which carry no settings, the task's own mark or the endpoint in force.
func incarnationOf(dl *delivery, eps endpointFinder) string {
	if dl.s != nil {
		return incarnation(dl.s.ep.CreatedAt)
	}
	if v := dl.hdr.Get(hdrIncarnation); v != "" && dl.hdr.Get(hdrEventKey) != "" {
		return v // a task's
	}
	if e := eps.endpoint(dl.e.id); e != nil {
		return incarnation(e.set.Load().ep.CreatedAt)
	}
	return ""
}

// createdAtOf turns an incarnation mark (Unix nanoseconds) into the
// endpoint's created_at in RFC 3339 UTC; "" stays "".
func createdAtOf(inc string) string {
	n, err := strconv.ParseInt(inc, 10, 64)
	if err != nil {
		return ""
	}
	return time.Unix(0, n).UTC().Format(time.RFC3339Nano)
}

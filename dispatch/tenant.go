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
	ok := true
	for _, id := range targets {
		e := d.eps.endpoint(id)
		if e == nil {
			continue
		}
		dl := &delivery{e: e, s: d.eps.current(e), ev: ev, data: msg.Data(), hdr: msg.Headers(), st: attemptState{Error: ev.badTenant}}
		dl.done = func(stored bool) { ok = ok && stored }
		if d.alreadyDelivered(dl) {
			continue
		}
		d.settle.deadLetter(dl, "rejected")
	}
	if len(targets) == 0 {
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
		d.log.Warn("settle event with a bad tenant", "event_id", ev.id, "err", err)
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

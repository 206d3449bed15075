package dispatch

import (
	"time"

	"github.com/hookjet/hookjet/dispatch/opsevent"
)

// announcer is the endpoint states' Announcer (package epstate): it names
// the endpoint an operational event is about (its description and tenant,
// as in force now) to package opsevent, which publishes hookjet's own
// event. An endpoint no longer in force is not announced.
type announcer struct {
	d   *Dispatcher
	pub *opsevent.Publisher
}

// Announce passes the operational event hookjet.ops.<kind> about endpoint
// id on to the publisher.
func (a announcer) Announce(kind, id, reason string, at time.Time) {
	e := a.d.endpoint(id)
	if e == nil {
		return
	}
	ep := e.set.Load().ep
	a.pub.Announce(kind, opsevent.Subject{ID: id, Description: ep.Description, Tenant: ep.Tenant}, reason, at)
}

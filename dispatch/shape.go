package dispatch

import (
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/jetstream"
)

// shape is the shape stage: the request a delivery's destination is sent,
// made from the event as stored (its id, type, tenant, ordering key,
// content type and payload). An endpoint's transformation reshapes it here;
// the signature is made by the destination over what shape returns.
func shape(dl *delivery) destination.Request {
	return destination.Request{
		EventID:     dl.ev.id,
		EventType:   dl.ev.typ,
		Tenant:      dl.ev.tenant,
		OrderingKey: jetstream.OrderingKey(dl.hdr),
		ContentType: dl.hdr.Get(jetstream.HdrContentType),
		Payload:     dl.data,
	}
}

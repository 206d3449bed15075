package dispatch

import (
	"slices"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/jetstream"
)

// matcher is the match stage: the endpoints an event goes to. The index
// (package routing's endpoint table) matches the event's type against the
// patterns of the endpoints of its tenant and of those without one; then
// each matched endpoint's payload filter (package filter, compiled with the
// endpoint's settings) may refuse it: no delivery, no record, counted in
// hookjet_filtered_total. The filters of one event share one parse of its
// payload and one budget, however many endpoints filter it. A delivery
// stored earlier (a task, an ordered entry) is checked again when it is
// taken, against the endpoint as it is then (notForEndpoint, task.go).
// An event of one of hookjet's own types (hookjet.*) goes only where its
// mark says hookjet published it (package opsevent), and never to the
// endpoint it is about.
type matcher struct {
	index  patternIndex
	eps    endpointSource
	series *series
	own    ownEvents // nil: no event of a hookjet.* type is hookjet's
}

// ownEvents recognises hookjet's own events and the endpoint each is about
// (opsevent.Publisher).
type ownEvents interface {
	About(id, typ, tenant string, h map[string][]string, data []byte) (endpoint string, ok bool)
}

// patternIndex is the pattern index of the endpoints in force
// (routing.Table).
type patternIndex interface {
	Match(tenant, eventType string, dst []string) []string
}

// match appends to dst the ids of the endpoints ev, with headers hdr and
// payload data, goes to. An event whose tenant header is not a tenant
// (ev.badTenant) matches the endpoints without a tenant only: the caller
// dead-letters it there (tenant.go).
func (m matcher) match(ev *event, hdr nats.Header, data []byte, dst []string) []string {
	if config.IsOperational(ev.typ) {
		if m.own == nil {
			return dst
		}
		about, ok := m.own.About(ev.id, ev.typ, ev.tenant, hdr, data)
		if !ok {
			return dst // published by someone else: to no one
		}
		dst = m.index.Match(ev.tenant, ev.typ, dst)
		dst = slices.DeleteFunc(dst, func(id string) bool { return id == about })
		return m.filter(ev, hdr, data, dst)
	}
	dst = m.index.Match(ev.tenant, ev.typ, dst)
	return m.filter(ev, hdr, data, dst)
}

// ownFor reports whether endpoint id, with patterns, may take ev by the
// rules of hookjet's own events: an event of another type may; one of a
// hookjet.* type needs hookjet's mark, a pattern naming hookjet. and
// another endpoint as its subject. Redelivery, which reads the stream by
// an endpoint's patterns rather than through the index, asks it.
func ownFor(own ownEvents, id string, patterns []string, ev *event, hdr nats.Header, data []byte) bool {
	if !config.IsOperational(ev.typ) {
		return true
	}
	if own == nil {
		return false
	}
	about, ok := own.About(ev.id, ev.typ, ev.tenant, hdr, data)
	if !ok || about == id {
		return false
	}
	return slices.ContainsFunc(patterns, func(p string) bool { return config.MatchEvent(p, ev.typ) })
}

// filter keeps the endpoints of dst whose filter takes ev.
func (m matcher) filter(ev *event, hdr nats.Header, data []byte, dst []string) []string {
	if m.eps == nil {
		return dst
	}
	var fe *filter.Event // made for the first endpoint with a filter, shared by the rest
	kept := dst[:0]
	for _, id := range dst {
		e := m.eps.endpoint(id)
		if e == nil {
			kept = append(kept, id) // removed meanwhile: the fan-out settles it
			continue
		}
		f := m.eps.current(e).filter
		if f == nil {
			kept = append(kept, id)
			continue
		}
		if fe == nil {
			fe = filter.NewEvent(filter.Input{
				Type: ev.typ, ID: ev.id, Tenant: ev.tenant, Key: jetstream.OrderingKey(hdr), Headers: hdr, Data: data,
			}, filter.Limits{})
		}
		if ok, err := f.Match(fe); !ok {
			m.series.countFiltered(e, err != nil)
			continue
		}
		kept = append(kept, id)
	}
	return kept
}

package dispatch

import (
	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/dispatch/settle"
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
// taken, against the endpoint as it is then (settle.NotForEndpoint).
type matcher struct {
	index  patternIndex
	eps    endpointSource
	series *settle.Series
}

// patternIndex is the pattern index of the endpoints in force
// (routing.Table).
type patternIndex interface {
	Match(tenant, eventType string, dst []string) []string
}

// target is an endpoint an event goes to: its id, and its runtime and
// settings as match found them (nil: removed meanwhile, or a matcher
// without endpoints).
type target struct {
	id string
	e  *endpoint
	s  *settings
}

// match appends to dst the endpoints ev, with headers hdr and payload data,
// goes to; ids is room for the index's answer. An event whose tenant header
// is not a tenant (ev.BadTenant) matches the endpoints without a tenant
// only: the caller dead-letters it there (tenant.go).
func (m matcher) match(ev *settle.Event, hdr nats.Header, data []byte, ids []string, dst []target) []target {
	ids = m.index.Match(ev.Tenant, ev.Type, ids)
	var fe *filter.Event // made for the first endpoint with a filter, shared by the rest
	for _, id := range ids {
		var e *endpoint
		if m.eps != nil {
			e = m.eps.endpoint(id)
		}
		if e == nil {
			dst = append(dst, target{id: id}) // removed meanwhile: the fan-out settles it
			continue
		}
		s := m.eps.current(e)
		f := s.filter
		if f == nil {
			dst = append(dst, target{id, e, s})
			continue
		}
		if fe == nil {
			fe = filter.NewEvent(filter.Input{
				Type: ev.Type, ID: ev.ID, Tenant: ev.Tenant, Key: jetstream.OrderingKey(hdr), Headers: hdr, Data: data,
			}, filter.Limits{})
		}
		if ok, err := f.Match(fe); !ok {
			m.series.CountFiltered(&e.Endpoint, err != nil)
			continue
		}
		dst = append(dst, target{id, e, s})
	}
	return dst
}

package dispatch

import (
	"github.com/nats-io/nats.go"

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
type matcher struct {
	index  patternIndex
	eps    endpointSource
	series *series
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
	dst = m.index.Match(ev.tenant, ev.typ, dst)
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

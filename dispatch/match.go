package dispatch

import (
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/catalog"

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
	// catalog checks an event that matched an endpoint, once (check);
	// nil: nothing checked. invalid counts what it refuses, by type.
	catalog *catalog.Live
	invalid *prometheus.CounterVec
}

// check checks an event that matched at least one endpoint against the
// catalogue, once whatever the number of endpoints: under catalog.validate
// warn an invalid payload is counted and delivered; under enforce, and for
// a type not in the catalogue under catalog.strict, ev.invalid says why and
// the fan-out dead-letters it as invalid for each endpoint (reject).
func (m matcher) check(ev *event, data []byte) {
	cat := m.catalog.Load()
	if cat.Mode() == catalog.Off && !cat.Strict() {
		return
	}
	v := cat.Check(ev.typ, data)
	if !v.Invalid() {
		return
	}
	if m.invalid != nil {
		label := ev.typ
		if v.Unknown {
			label = "_unknown" // any string: one series for them all
		}
		m.invalid.WithLabelValues(label).Inc()
	}
	if v.Unknown || cat.Mode() == catalog.Enforce {
		ev.invalid = v.Reason()
	}
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
	defer func() {
		if len(dst) > 0 && m.catalog != nil {
			m.check(ev, data)
		}
	}()
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
	dst = kept
	return kept
}

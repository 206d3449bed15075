package dispatch

import (
	"slices"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/catalog"
	"github.com/hookjet/hookjet/config"
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
// An event of one of hookjet's own types (hookjet.*) goes only where its
// mark says hookjet published it (package opsevent), and never to the
// endpoint it is about.
type matcher struct {
	index  patternIndex
	eps    endpointSource
	series *settle.Series
	own    ownEvents // nil: no event of a hookjet.* type is hookjet's
	// catalog checks an event that matched an endpoint, once (check);
	// nil: nothing checked. invalid counts what it refuses, by type.
	catalog *catalog.Live
	invalid *prometheus.CounterVec
}

// ownEvents recognises hookjet's own events and the endpoint each is about
// (opsevent.Publisher).
type ownEvents interface {
	About(id, typ, tenant string, h map[string][]string, data []byte) (endpoint string, ok bool)
}

// check checks an event that matched targets against the catalogue, once
// whatever their number: under catalog.validate warn an invalid payload is
// counted and delivered; under enforce, and for a type not in the
// catalogue under catalog.strict, it returns why, and the fan-out
// dead-letters the event as invalid for each target (reject). "": deliver.
func (m matcher) check(ev *settle.Event, data []byte, targets []target) string {
	if len(targets) == 0 || m.catalog == nil {
		return ""
	}
	cat := m.catalog.Load()
	if cat.Mode() == catalog.Off && !cat.Strict() {
		return ""
	}
	v := cat.Check(ev.Type, data)
	if !v.Invalid() {
		return ""
	}
	if m.invalid != nil {
		label := ev.Type
		if v.Unknown {
			label = "_unknown" // any string: one series for them all
		}
		m.invalid.WithLabelValues(label).Inc()
	}
	if v.Unknown || cat.Mode() == catalog.Enforce {
		return v.Reason()
	}
	return ""
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
	if config.IsOperational(ev.Type) {
		if m.own == nil {
			return dst
		}
		about, ok := m.own.About(ev.ID, ev.Type, ev.Tenant, hdr, data)
		if !ok {
			return dst // published by someone else: to no one
		}
		ids = m.index.Match(ev.Tenant, ev.Type, ids)
		ids = slices.DeleteFunc(ids, func(id string) bool { return id == about })
		return m.filter(ev, hdr, data, ids, dst)
	}
	return m.filter(ev, hdr, data, m.index.Match(ev.Tenant, ev.Type, ids), dst)
}

// filter appends to dst the endpoints of ids whose filter takes ev, with
// their runtime and settings.
func (m matcher) filter(ev *settle.Event, hdr nats.Header, data []byte, ids []string, dst []target) []target {
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

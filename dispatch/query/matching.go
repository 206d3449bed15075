package query

import (
	"slices"
	"time"

	"github.com/hookjet/hookjet/breaker"
)

// Matched is an endpoint in force whose patterns and tenant match an
// event, with what holds its deliveries now.
type Matched struct {
	Endpoint
	// BreakerOpenUntil is when its open breaker lets a probe through; zero
	// while the breaker lets deliveries go.
	BreakerOpenUntil time.Time
}

// Matching returns the endpoints in force that an event of type typ with
// tenant tenant ("" for none) goes to by pattern and tenant, before their
// filters, ordered by id: the same index lookup as the fan-out's, so an
// endpoint of another tenant is never among them.
func (q *Queries) Matching(tenant, typ string) []Matched {
	now := q.now()
	ids := q.src.Match(tenant, typ)
	slices.Sort(ids)
	out := make([]Matched, 0, len(ids))
	for _, id := range slices.Compact(ids) {
		e, ok := q.src.Endpoint(id, now)
		if !ok {
			continue
		}
		m := Matched{Endpoint: e}
		if h, ok := q.breakers.Health(id); ok && h.State == breaker.Open && h.OpenUntil.After(now) {
			m.BreakerOpenUntil = h.OpenUntil
		}
		out = append(out, m)
	}
	return out
}

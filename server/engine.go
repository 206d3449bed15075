package server

import (
	"context"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch"
	"github.com/hookjet/hookjet/dispatch/query"
	"github.com/hookjet/hookjet/endpoints"
)

// engine is the delivery engine as the admin API sees it (admin.Backend
// and admin.Deliveries): its queries (package query), its operator's
// actions, and the endpoint table's and states' own calls.
type engine struct {
	*query.Queries
	*dispatch.Operator
	disp *dispatch.Dispatcher
}

// newEngine is d's admin view.
func newEngine(d *dispatch.Dispatcher) engine {
	return engine{Queries: d.Queries(), Operator: d.Operator(), disp: d}
}

// SetDisabled disables or enables endpoint id for every process.
func (e engine) SetDisabled(ctx context.Context, id string, disabled bool, reason string) error {
	return e.disp.SetDisabled(ctx, id, disabled, reason)
}

// ConfigEndpoint returns the config-file endpoint with this id.
func (e engine) ConfigEndpoint(id string) (config.Endpoint, bool) { return e.disp.ConfigEndpoint(id) }

// Applied puts an endpoint the admin API just stored in force here.
func (e engine) Applied(ctx context.Context, rec endpoints.Record) error {
	return e.disp.Applied(ctx, rec)
}

// Removed stops an endpoint the admin API just deleted.
func (e engine) Removed(id string, rev uint64) { e.disp.Removed(id, rev) }

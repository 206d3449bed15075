package server

import (
	"context"

	"github.com/hookjet/hookjet/dispatch"
	"github.com/hookjet/hookjet/dispatch/operate"
	"github.com/hookjet/hookjet/dispatch/query"
)

// engine is the delivery engine as the admin API's Backend sees it: its
// queries (package query), its operator's actions (breaker resets) and
// the endpoint states' SetDisabled.
type engine struct {
	*query.Queries
	*operate.Operator
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

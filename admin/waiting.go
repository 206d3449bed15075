package admin

import (
	"context"
	"net/http"
	"slices"

	"github.com/hookjet/hookjet/api"
)

// resetBreaker is POST /api/v1/endpoints/{id}/breaker/reset: the breaker is
// closed (and a hold lifted) in this process when the answer comes, in
// every process within about a NATS round trip, and the endpoint's waiting
// deliveries go at once. It answers the endpoint.
func (a *handler) resetBreaker(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := timeout(r)
	defer cancel()
	id := r.PathValue("id")
	if err := a.b.ResetBreaker(ctx, id); err != nil {
		a.fail(w, r, err)
		return
	}
	ep, err := a.b.Endpoint(ctx, id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ep)
}

// replayWaits adds to res why the deliveries it replayed (or, in a dry run,
// would replay) wait instead of going now, per endpoint.
func (a *handler) replayWaits(ctx context.Context, req api.ReplayRequest, res *api.ReplayResult) {
	targets := res.Targets()
	if req.Endpoint != "" && !slices.Contains(targets, req.Endpoint) {
		targets = append(targets, req.Endpoint)
		slices.Sort(targets)
	}
	for _, id := range targets {
		st, err := a.b.Endpoint(ctx, id)
		if err != nil {
			continue // not configured: Skipped and Errors say so
		}
		for _, wt := range st.Waiting {
			wt.Endpoint = id
			res.Waiting = append(res.Waiting, wt)
			res.Warnings = append(res.Warnings, "the replayed events wait: "+api.Describe(wt, a.now()))
		}
	}
}

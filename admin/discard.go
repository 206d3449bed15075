package admin

import (
	"context"
	"net/http"
	"time"

	"github.com/hookjet/hookjet/api"
)

// DiscardFunc deletes the dead letters matching f from HOOKJET_DLQ (with
// dryRun it only counts them) and returns how many matched and how many
// it deleted.
type DiscardFunc func(ctx context.Context, f api.DLQFilter, dryRun bool) (matched, discarded int, err error)

// WithDiscard serves POST /api/v1/dlq/discard with fn; without it the
// route answers 501.
func WithDiscard(fn DiscardFunc) Option { return func(a *handler) { a.discard = fn } }

func (a *handler) dlqDiscard(w http.ResponseWriter, r *http.Request) {
	if a.discard == nil {
		writeError(w, http.StatusNotImplemented, "discarding dead letters is not available in this process")
		return
	}
	var req api.DiscardRequest
	body, ok := readBodyN(w, r, 1<<20)
	if !ok || !decodeRequired(w, body, &req, `a JSON object is required, such as {"endpoint": "ID", "dry_run": true}`) {
		return
	}
	if req.Endpoint == "" && len(req.IDs) == 0 && req.Since == "" && req.Until == "" {
		// Discarding is final: every dead letter at once is never a default.
		writeFieldError(w, http.StatusBadRequest, "body", "body: name an endpoint, ids or a time range (since) of the dead letters to discard")
		return
	}
	now := a.now()
	f := api.DLQFilter{Endpoint: req.Endpoint, IDs: req.IDs}
	var err error
	if f.Since, err = api.ParseTime(req.Since, now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "since", "since: "+err.Error())
		return
	}
	if f.Until, err = api.ParseTime(req.Until, now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "until", "until: "+err.Error())
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	matched, discarded, err := a.discard(ctx, f, req.DryRun)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.DiscardResult{Matched: matched, Discarded: discarded, DryRun: req.DryRun})
}

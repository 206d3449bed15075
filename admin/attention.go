package admin

import (
	"context"

	"github.com/hookjet/hookjet/api"
)

// attentionChunk is how many endpoints an attention=true listing asks the
// engine for at a time while it looks for ones that need attention: each
// call sorts the ids once, and memory stays bounded.
const attentionChunk = 25000

// NeedsAttention reports whether an operator should look at an endpoint:
// it is disabled or held, its breaker is not closed, its last attempts
// failed, it has dead letters, or deliveries wait for it.
func NeedsAttention(e api.EndpointStatus) bool {
	return e.Disabled || e.HeldUntil != nil || (e.Breaker.State != "" && e.Breaker.State != "closed") ||
		e.ConsecutiveFailures > 0 || e.Breaker.ConsecutiveFailures > 0 || e.DeadLetters > 0 || e.Pending > 0
}

// AttentionLister is what a Backend implements when it can list the
// endpoints that need attention faster than by building every endpoint's
// status ([NeedsAttention] over EndpointPage, which the API does
// otherwise).
type AttentionLister interface {
	AttentionPage(ctx context.Context, tenant, after string, limit int) ([]api.EndpointStatus, string, error)
}

// attentionPage is GET /api/v1/endpoints?attention=true: the page of
// endpoints after after (of tenant when set) that need attention, in id
// order, read from the engine in chunks so that memory stays bounded with
// 100,000 endpoints.
func (a *handler) attentionPage(ctx context.Context, tenant, after string, limit int) ([]api.EndpointStatus, string, error) {
	if l, ok := a.b.(AttentionLister); ok {
		return l.AttentionPage(ctx, tenant, after, limit)
	}
	var out []api.EndpointStatus
	for {
		eps, next, err := a.b.EndpointPage(ctx, tenant, after, attentionChunk)
		if err != nil {
			return nil, "", err
		}
		for _, e := range eps {
			if !NeedsAttention(e) {
				continue
			}
			if len(out) == limit {
				return out, out[len(out)-1].ID, nil
			}
			out = append(out, e)
		}
		if next == "" {
			return out, "", nil
		}
		after = next
	}
}

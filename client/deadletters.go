package client

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/hookjet/hookjet/api"
)

// DLQQuery selects dead letters; zero fields are left out. Since and Until
// are RFC 3339 times or durations ago ("6h").
type DLQQuery struct {
	Endpoint     string
	Since, Until string
	// Limit caps the list (server default 100, at most 10000).
	Limit int
	// IDs are event ids.
	IDs []string
	// Deleted lists the dead letters of deleted endpoints instead of those
	// of the endpoints in force.
	Deleted bool
}

// DeadLetters lists the dead letters q selects.
func (c *Client) DeadLetters(ctx context.Context, q DLQQuery, opts ...CallOption) ([]api.DLQEntry, error) {
	v := query{}
	v.set("endpoint", q.Endpoint)
	v.set("since", q.Since)
	v.set("until", q.Until)
	v.setInt("limit", q.Limit)
	v.set("ids", strings.Join(q.IDs, ","))
	if q.Deleted {
		v.set("deleted", "true")
	}
	var out api.DLQList
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/dlq", query: v.Values, out: &out}, opts)
	return out.Entries, err
}

// DeadLetterStats summarises the dead letters per endpoint.
func (c *Client) DeadLetterStats(ctx context.Context, opts ...CallOption) ([]api.DLQStat, error) {
	var out api.DLQStats
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/dlq/stats", out: &out}, opts)
	return out.Endpoints, err
}

// Replay sends the dead letters r selects again (an empty r: every one).
func (c *Client) Replay(ctx context.Context, r api.ReplayRequest, opts ...CallOption) (api.ReplayResult, error) {
	var out api.ReplayResult
	err := c.do(ctx, &call{method: http.MethodPost, path: "/api/v1/dlq/replay", in: r, out: &out}, opts)
	return out, err
}

// Discard deletes the dead letters r selects for good (r must name an
// endpoint, ids or a time range).
func (c *Client) Discard(ctx context.Context, r api.DiscardRequest, opts ...CallOption) (api.DiscardResult, error) {
	var out api.DiscardResult
	err := c.do(ctx, &call{method: http.MethodPost, path: "/api/v1/dlq/discard", in: r, out: &out}, opts)
	return out, err
}

// Summary returns the queue depths, the last hour's counts and why
// deliveries wait.
func (c *Client) Summary(ctx context.Context, opts ...CallOption) (api.Summary, error) {
	var s api.Summary
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/summary", out: &s}, opts)
	return s, err
}

// CreatePortalSession returns a signed link to the customer portal, scoped
// to r.Tenant's endpoints.
func (c *Client) CreatePortalSession(ctx context.Context, r api.PortalSessionRequest, opts ...CallOption) (api.PortalSession, error) {
	var out api.PortalSession
	err := c.do(ctx, &call{method: http.MethodPost, path: "/api/v1/portal/sessions", in: r, out: &out}, opts)
	return out, err
}

// OpenAPI returns the OpenAPI document the server serves.
func (c *Client) OpenAPI(ctx context.Context) ([]byte, error) {
	var raw json.RawMessage
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/openapi.json"}, []CallOption{Raw(&raw)})
	return raw, err
}

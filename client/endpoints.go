package client

import (
	"context"
	"iter"
	"net/http"
	"strconv"

	"github.com/hookjet/hookjet/api"
)

// EndpointQuery selects a page of endpoints; zero fields are left out.
type EndpointQuery struct {
	Tenant string
	// Limit is the page size (server default 100, at most 1000).
	Limit int
	// After is the cursor: the Next of the previous page.
	After string
	// Attention lists only the endpoints that need attention.
	Attention bool
}

// Endpoints returns one page of endpoints, ordered by id; its Next is the
// After of the following page, empty after the last.
func (c *Client) Endpoints(ctx context.Context, q EndpointQuery, opts ...CallOption) (api.EndpointPage, error) {
	v := query{}
	v.set("tenant", q.Tenant)
	v.setInt("limit", q.Limit)
	v.set("after", q.After)
	if q.Attention {
		v.set("attention", "true")
	}
	var p api.EndpointPage
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/endpoints", query: v.Values, out: &p}, opts)
	return p, err
}

// AllEndpoints yields the endpoints q selects, page after page, from
// q.After to the last; it stops at the first error, which it yields.
func (c *Client) AllEndpoints(ctx context.Context, q EndpointQuery) iter.Seq2[api.EndpointStatus, error] {
	return func(yield func(api.EndpointStatus, error) bool) {
		for {
			p, err := c.Endpoints(ctx, q)
			if err != nil {
				yield(api.EndpointStatus{}, err)
				return
			}
			for _, e := range p.Endpoints {
				if !yield(e, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			q.After = p.Next
		}
	}
}

// Endpoint returns one endpoint; an unknown id is an [*Error] wrapping
// api.ErrUnknownEndpoint.
func (c *Client) Endpoint(ctx context.Context, id string, opts ...CallOption) (api.EndpointStatus, error) {
	var e api.EndpointStatus
	err := c.do(ctx, &call{method: http.MethodGet, path: endpointPath(id), out: &e, notFound: api.ErrUnknownEndpoint}, opts)
	return e, err
}

// CreateEndpoint creates an API endpoint from def, its definition as the
// API takes it (docs/api.md: a map or a struct that encodes to
// {"id"?, "url", "events", ...}). The answer holds the signing secret
// generated when def gives none, shown only this once.
func (c *Client) CreateEndpoint(ctx context.Context, def any, opts ...CallOption) (api.CreatedEndpoint, error) {
	var e api.CreatedEndpoint
	err := c.do(ctx, &call{method: http.MethodPost, path: "/api/v1/endpoints", in: def, out: &e}, opts)
	return e, err
}

// UpdateEndpoint changes the fields patch gives (null restores a default).
func (c *Client) UpdateEndpoint(ctx context.Context, id string, patch any, opts ...CallOption) (api.EndpointStatus, error) {
	var e api.EndpointStatus
	err := c.do(ctx, &call{method: http.MethodPatch, path: endpointPath(id), in: patch, out: &e, notFound: api.ErrUnknownEndpoint}, opts)
	return e, err
}

// DeleteEndpoint deletes an API endpoint and returns how many waiting
// deliveries were dropped with it (its dead letters stay).
func (c *Client) DeleteEndpoint(ctx context.Context, id string, opts ...CallOption) (discarded int, err error) {
	cl := &call{method: http.MethodDelete, path: endpointPath(id), notFound: api.ErrUnknownEndpoint}
	if err := c.do(ctx, cl, opts); err != nil {
		return 0, err
	}
	n, _ := strconv.Atoi(cl.header.Get("Hookjet-Discarded"))
	return n, nil
}

// EnableEndpoint resumes deliveries to the endpoint in every process.
func (c *Client) EnableEndpoint(ctx context.Context, id string, opts ...CallOption) (api.EndpointStatus, error) {
	return c.endpointAction(ctx, id, "/enable", opts)
}

// DisableEndpoint stops deliveries to the endpoint in every process: they
// wait until it is enabled.
func (c *Client) DisableEndpoint(ctx context.Context, id string, opts ...CallOption) (api.EndpointStatus, error) {
	return c.endpointAction(ctx, id, "/disable", opts)
}

// ResetBreaker closes the endpoint's circuit breaker (and lifts a
// Retry-After hold) in every process: its waiting deliveries go now.
func (c *Client) ResetBreaker(ctx context.Context, id string, opts ...CallOption) (api.EndpointStatus, error) {
	return c.endpointAction(ctx, id, "/breaker/reset", opts)
}

func (c *Client) endpointAction(ctx context.Context, id, action string, opts []CallOption) (api.EndpointStatus, error) {
	var e api.EndpointStatus
	err := c.do(ctx, &call{method: http.MethodPost, path: endpointPath(id, action), out: &e, notFound: api.ErrUnknownEndpoint}, opts)
	return e, err
}

// RotateSecret gives the endpoint a new signing secret and returns it; the
// old ones keep signing for grace (a Go duration; empty: the server's
// default, 24h).
func (c *Client) RotateSecret(ctx context.Context, id, grace string, opts ...CallOption) (secret string, err error) {
	in := map[string]string{}
	if grace != "" {
		in["grace"] = grace
	}
	var out struct {
		Secret string `json:"secret"`
	}
	err = c.do(ctx, &call{method: http.MethodPost, path: endpointPath(id, "/secret/rotate"), in: in, out: &out, notFound: api.ErrUnknownEndpoint}, opts)
	return out.Secret, err
}

// TestEndpoint sends a signed hookjet.test event to the endpoint through
// the normal delivery path and returns its event id.
func (c *Client) TestEndpoint(ctx context.Context, id string, opts ...CallOption) (eventID string, err error) {
	var out api.TestResult
	err = c.do(ctx, &call{method: http.MethodPost, path: endpointPath(id, "/test"), out: &out, notFound: api.ErrUnknownEndpoint}, opts)
	return out.EventID, err
}

// TestEndpointWith sends a signed test event of req's type and payload (an
// example of the catalogue, say) to the endpoint only, and returns its
// event id (POST /api/v1/endpoints/{id}/test).
func (c *Client) TestEndpointWith(ctx context.Context, id string, req api.TestRequest, opts ...CallOption) (eventID string, err error) {
	var out api.TestResult
	err = c.do(ctx, &call{method: http.MethodPost, path: endpointPath(id, "/test"), in: req, out: &out, notFound: api.ErrUnknownEndpoint}, opts)
	return out.EventID, err
}

// Redeliver sends the stored events of r's time range to the endpoint
// again, with their original ids.
func (c *Client) Redeliver(ctx context.Context, id string, r api.RedeliverRequest, opts ...CallOption) (api.RedeliverResult, error) {
	var out api.RedeliverResult
	err := c.do(ctx, &call{method: http.MethodPost, path: endpointPath(id, "/redeliver"), in: r, out: &out, notFound: api.ErrUnknownEndpoint}, opts)
	return out, err
}

// TestFilter answers whether the endpoint's filter, or t.Filter when set,
// lets t's event through (POST /api/v1/endpoints/{id}/filter/test).
func (c *Client) TestFilter(ctx context.Context, id string, t api.CodeTest, opts ...CallOption) (api.FilterTestResult, error) {
	var out api.FilterTestResult
	err := c.do(ctx, &call{method: http.MethodPost, path: endpointPath(id, "/filter/test"), in: t, out: &out, notFound: api.ErrUnknownEndpoint}, opts)
	return out, err
}

// TestTransform answers the request the endpoint's transform, or
// t.Transform when set, makes of t's event, or its error
// (POST /api/v1/endpoints/{id}/transform/test).
func (c *Client) TestTransform(ctx context.Context, id string, t api.CodeTest, opts ...CallOption) (api.TransformTestResult, error) {
	var out api.TransformTestResult
	err := c.do(ctx, &call{method: http.MethodPost, path: endpointPath(id, "/transform/test"), in: t, out: &out, notFound: api.ErrUnknownEndpoint}, opts)
	return out, err
}

package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"

	"github.com/hookjet/hookjet/api"
)

// EventQuery selects stored events, newest first; zero fields are left
// out. Since and Until are RFC 3339 times or durations ago.
type EventQuery struct {
	Type   string
	Tenant string
	// Prefix selects the events whose id starts with it.
	Prefix       string
	Since, Until string
	// Limit is the page size (server default 100, at most 1000).
	Limit int
	// Cursor is the Next of the previous page.
	Cursor string
}

func (q EventQuery) values() url.Values {
	v := query{}
	v.set("type", q.Type)
	v.set("tenant", q.Tenant)
	v.set("prefix", q.Prefix)
	v.set("since", q.Since)
	v.set("until", q.Until)
	v.setInt("limit", q.Limit)
	v.set("cursor", q.Cursor)
	return v.Values
}

// EventsPage returns one page of the stored events q selects
// (GET /api/v1/events); its Next is the Cursor of the following (older)
// page, empty after the last.
func (c *Client) EventsPage(ctx context.Context, q EventQuery, opts ...CallOption) (api.EventPage, error) {
	var p api.EventPage
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/events", query: q.values(), out: &p}, opts)
	return p, err
}

// Events yields the stored events q selects, newest first, page after page
// to the last; it stops at the first error, which it yields.
func (c *Client) Events(ctx context.Context, q EventQuery) iter.Seq2[api.EventSummary, error] {
	return func(yield func(api.EventSummary, error) bool) {
		for {
			p, err := c.EventsPage(ctx, q)
			if err != nil {
				yield(api.EventSummary{}, err)
				return
			}
			for _, e := range p.Events {
				if !yield(e, nil) {
					return
				}
			}
			if p.Next == "" {
				return
			}
			q.Cursor = p.Next
		}
	}
}

// TenantEvent returns event id as tenant may see it
// (GET /api/v1/events/{id}?tenant=): an error with status 404 when it is
// not that tenant's, and only the deliveries of that tenant's endpoints.
func (c *Client) TenantEvent(ctx context.Context, tenant, id string, opts ...CallOption) (api.Event, error) {
	var ev api.Event
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/events/" + url.PathEscape(id), query: url.Values{"tenant": {tenant}}, out: &ev}, opts)
	return ev, err
}

package client

import (
	"context"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
)

// AttemptQuery selects records of the delivery log, newest first; zero
// fields are left out. Since and Until are RFC 3339 times or durations ago.
type AttemptQuery struct {
	// Endpoint is used by Attempts and AttemptsPage (EndpointAttempts
	// takes the id).
	Endpoint     string
	Tenant       string
	EventType    string
	Class        string
	Since, Until string
	// Limit is the page size (server default 100, at most 1000).
	Limit int
	// After is the cursor: the Next of the previous page.
	After string
}

func (q AttemptQuery) values(withEndpoint bool) url.Values {
	v := query{}
	if withEndpoint {
		v.set("endpoint", q.Endpoint)
	}
	v.set("tenant", q.Tenant)
	v.set("event_type", q.EventType)
	v.set("class", q.Class)
	v.set("since", q.Since)
	v.set("until", q.Until)
	v.setInt("limit", q.Limit)
	v.set("after", q.After)
	return v.Values
}

// EndpointAttemptsPage returns one page of the endpoint's attempts; its
// Next is the After of the following (older) page, empty after the last.
func (c *Client) EndpointAttemptsPage(ctx context.Context, id string, q AttemptQuery, opts ...CallOption) (api.AttemptPage, error) {
	var p api.AttemptPage
	err := c.do(ctx, &call{method: http.MethodGet, path: endpointPath(id, "/attempts"), query: q.values(false), out: &p}, opts)
	return p, err
}

// AttemptsPage returns one page of the attempts of every endpoint (or of
// q.Endpoint).
func (c *Client) AttemptsPage(ctx context.Context, q AttemptQuery, opts ...CallOption) (api.AttemptPage, error) {
	var p api.AttemptPage
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/attempts", query: q.values(true), out: &p}, opts)
	return p, err
}

// EndpointAttempts yields the endpoint's attempts, newest first, page
// after page to the last; it stops at the first error, which it yields.
func (c *Client) EndpointAttempts(ctx context.Context, id string, q AttemptQuery) iter.Seq2[attempt.Record, error] {
	return pages(q, func(q AttemptQuery) (api.AttemptPage, error) { return c.EndpointAttemptsPage(ctx, id, q) })
}

// Attempts yields the attempts q selects, newest first, page after page.
func (c *Client) Attempts(ctx context.Context, q AttemptQuery) iter.Seq2[attempt.Record, error] {
	return pages(q, func(q AttemptQuery) (api.AttemptPage, error) { return c.AttemptsPage(ctx, q) })
}

func pages(q AttemptQuery, page func(AttemptQuery) (api.AttemptPage, error)) iter.Seq2[attempt.Record, error] {
	return func(yield func(attempt.Record, error) bool) {
		for {
			p, err := page(q)
			if err != nil {
				yield(attempt.Record{}, err)
				return
			}
			for _, r := range p.Attempts {
				if !yield(r, nil) {
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

// Event returns an event and its deliveries; an id neither log knows is an
// [*Error] with status 404.
func (c *Client) Event(ctx context.Context, id string, opts ...CallOption) (api.Event, error) {
	var ev api.Event
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/events/" + url.PathEscape(id), out: &ev}, opts)
	return ev, err
}

// ExportQuery selects what an export streams; zero fields are left out.
type ExportQuery struct {
	Endpoint     string
	Tenant       string // attempts only
	EventType    string // attempts only
	Class        string // attempts only
	Since, Until string
	Deleted      bool // dead letters only
	// Format is csv (the server's default) or jsonl.
	Format string
}

// Export streams every matching record of what ("attempts" or "dlq") to w
// as it arrives: CSV with a header row, or JSON lines. The client's HTTP
// timeout applies; an export may be long, so give it a client without one.
func (c *Client) Export(ctx context.Context, what string, q ExportQuery, w io.Writer) error {
	v := query{}
	v.set("endpoint", q.Endpoint)
	v.set("tenant", q.Tenant)
	v.set("event_type", q.EventType)
	v.set("class", q.Class)
	v.set("since", q.Since)
	v.set("until", q.Until)
	if q.Deleted {
		v.set("deleted", "true")
	}
	v.set("format", q.Format)
	cl := &call{method: http.MethodGet, path: "/api/v1/export/" + url.PathEscape(what), query: v.Values}
	resp, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode >= 300 {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return newError(resp.StatusCode, raw, nil)
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("export %s: %w", what, err)
	}
	return nil
}

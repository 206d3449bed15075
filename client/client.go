package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Client calls one hookjet's admin and publish APIs. It is safe for
// concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// Option configures a [Client].
type Option func(*Client)

// WithToken sends "Authorization: Bearer <token>" (admin.token, or
// publish.token for [Client.Publish]) with every call.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient makes the calls with hc instead of a client whose only
// limit is each call's context.
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.hc = hc } }

// New returns a client of the API at baseURL ("http://127.0.0.1:8089";
// without a scheme, http:// is assumed).
func New(baseURL string, opts ...Option) *Client {
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	c := &Client{base: strings.TrimRight(baseURL, "/"), hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// BaseURL is the API's address as the client calls it.
func (c *Client) BaseURL() string { return c.base }

// CallOption changes one call.
type CallOption func(*call)

// Raw stores the answer's body, as received, in dst (for printing the
// server's JSON unchanged); the typed result is decoded as well.
func Raw(dst *json.RawMessage) CallOption { return func(cl *call) { cl.raw = dst } }

// call is one request and what its answer is decoded into.
type call struct {
	method, path string
	query        url.Values
	in           any
	out          any
	raw          *json.RawMessage
	notFound     error // the kind a 404 wraps; nil: none
	header       http.Header
}

func (c *Client) do(ctx context.Context, cl *call, opts []CallOption) error {
	for _, o := range opts {
		o(cl)
	}
	resp, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", cl.method, cl.path, err)
	}
	cl.header = resp.Header
	if resp.StatusCode >= 300 {
		return newError(resp.StatusCode, raw, cl.notFound)
	}
	if cl.raw != nil {
		*cl.raw = raw
	}
	if cl.out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, cl.out); err != nil {
			return fmt.Errorf("%s %s: decoding the answer: %w", cl.method, cl.path, err)
		}
	}
	return nil
}

// send makes the request of cl; an error is the transport's (the server
// did not answer), unwrapped.
func (c *Client) send(ctx context.Context, cl *call) (*http.Response, error) {
	var body io.Reader
	if cl.in != nil {
		b, err := json.Marshal(cl.in)
		if err != nil {
			return nil, err
		}
		body = bytes.NewReader(b)
	}
	u := c.base + cl.path
	if len(cl.query) > 0 {
		u += "?" + cl.query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, cl.method, u, body)
	if err != nil {
		return nil, err
	}
	if cl.in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	return c.hc.Do(req)
}

// endpointPath is /api/v1/endpoints/{id} and the rest.
func endpointPath(id string, rest ...string) string {
	return "/api/v1/endpoints/" + url.PathEscape(id) + strings.Join(rest, "")
}

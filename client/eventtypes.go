package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/hookjet/hookjet/api"
)

// eventTypePath is /api/v1/event-types/{name}.
func eventTypePath(name string) string { return "/api/v1/event-types/" + url.PathEscape(name) }

// EventTypes lists the event-type catalogue, ordered by name, with how
// payloads are checked (validate, strict).
func (c *Client) EventTypes(ctx context.Context, opts ...CallOption) (api.EventTypeList, error) {
	var l api.EventTypeList
	err := c.do(ctx, &call{method: http.MethodGet, path: "/api/v1/event-types", out: &l}, opts)
	return l, err
}

// EventType returns one event type; an unknown name is an error wrapping
// api.ErrUnknownEventType.
func (c *Client) EventType(ctx context.Context, name string, opts ...CallOption) (api.EventType, error) {
	var t api.EventType
	err := c.do(ctx, &call{method: http.MethodGet, path: eventTypePath(name), out: &t, notFound: api.ErrUnknownEventType}, opts)
	return t, err
}

// CreateEventType adds an event type (name, description, schema, examples,
// deprecated). A bad schema or an example that fails it is a 400 naming
// schema or examples[i]; a name taken wraps api.ErrEventTypeExists.
func (c *Client) CreateEventType(ctx context.Context, t api.EventType, opts ...CallOption) (api.EventType, error) {
	var out api.EventType
	err := c.do(ctx, &call{method: http.MethodPost, path: "/api/v1/event-types", in: t, out: &out}, opts)
	return out, err
}

// UpdateEventType changes the fields p sets of an API event type; builtin
// and config types answer 409 (api.ErrConflict).
func (c *Client) UpdateEventType(ctx context.Context, name string, p api.EventTypePatch, opts ...CallOption) (api.EventType, error) {
	var out api.EventType
	err := c.do(ctx, &call{method: http.MethodPatch, path: eventTypePath(name), in: p, out: &out, notFound: api.ErrUnknownEventType}, opts)
	return out, err
}

// DeleteEventType removes an API event type.
func (c *Client) DeleteEventType(ctx context.Context, name string, opts ...CallOption) error {
	return c.do(ctx, &call{method: http.MethodDelete, path: eventTypePath(name), notFound: api.ErrUnknownEventType}, opts)
}

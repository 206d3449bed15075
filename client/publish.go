package client

import (
	"context"
	"encoding/json"
	"net/http"
)

// Event is one event to publish (POST /api/v1/events).
type Event struct {
	// ID is the event's id, its webhook-id; empty: the server generates
	// one. Publishing an id again stores nothing (a duplicate).
	ID string `json:"id,omitempty"`
	// Type is the event type, such as order.created.
	Type string `json:"type"`
	// Data is the payload: any JSON value.
	Data json.RawMessage `json:"data"`
	// Tenant is the event's tenant: only that tenant's endpoints (and
	// those without a tenant) receive it.
	Tenant string `json:"tenant,omitempty"`
	// Key is the ordering key: endpoints with ordering: key receive the
	// key's events in order.
	Key string `json:"key,omitempty"`
}

// PublishResult is the answer of a publish: the events' ids, in the order
// given, and how many were duplicates (stored before, not stored again).
type PublishResult struct {
	IDs        []string `json:"ids"`
	Duplicates int      `json:"duplicates"`
}

// Publish stores events (one, or up to 1,000 in one request) and returns
// once every one is on disk as durably as a NATS publish. With the
// client's token (WithToken: publish.token or admin.token).
func (c *Client) Publish(ctx context.Context, events []Event, opts ...CallOption) (PublishResult, error) {
	var in any = struct {
		Events []Event `json:"events"`
	}{events}
	if len(events) == 1 {
		in = events[0]
	}
	var out PublishResult
	err := c.do(ctx, &call{method: http.MethodPost, path: "/api/v1/events", in: in, out: &out}, opts)
	return out, err
}

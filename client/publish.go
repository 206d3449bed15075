package client

import (
	"context"
	"net/http"

	"github.com/hookjet/hookjet/api"
)

// Publish stores events (one, or up to 1,000 in one request) and returns
// once every one is on disk as durably as a NATS publish. With the
// client's token (WithToken: publish.token or admin.token). The answer
// names the duplicates (DuplicateIDs) and, per event (Results), where it
// is stored: for a duplicate, where the copy stored first is.
func (c *Client) Publish(ctx context.Context, events []api.PublishEvent, opts ...CallOption) (api.PublishResult, error) {
	var in any = api.PublishBatch{Events: events}
	if len(events) == 1 {
		in = events[0]
	}
	var out api.PublishResult
	err := c.do(ctx, &call{method: http.MethodPost, path: "/api/v1/events", in: in, out: &out}, opts)
	return out, err
}

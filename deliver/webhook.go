package deliver

import (
	"context"
	"net/http"
	"time"

	"github.com/hookjet/hookjet/destination"
)

// Webhook is one endpoint's webhook destination: a [destination.Destination]
// that POSTs each attempt through a shared [Client]. It holds only the
// endpoint's settings; the client holds the connections.
type Webhook struct {
	c        *Client
	url      string
	header   http.Header
	signer   *Signer
	timeout  time.Duration
	insecure bool
	strict   bool
}

var _ destination.Destination = (*Webhook)(nil)

// Open returns the webhook destination of ep, which sends through c. It
// never fails: an invalid URL is refused by each Send ([Rejected]), as
// [Client.Do] refuses it.
func (c *Client) Open(ep destination.Endpoint) *Webhook {
	return &Webhook{
		c:        c,
		url:      ep.URL,
		header:   ep.Header,
		signer:   ep.Signer,
		timeout:  ep.Timeout,
		insecure: ep.InsecureSkipVerify,
		strict:   ep.Strict,
	}
}

// Send makes one attempt with [Client.Do] and reports its [Outcome] as a
// [destination.Result], with the outcome's [Outcome.Reason] when it is not
// [Success]. r.EventType and r.Tenant are not sent.
func (w *Webhook) Send(ctx context.Context, r destination.Request) destination.Result {
	req := Request{
		URL:                w.url,
		ID:                 r.EventID,
		Body:               r.Payload,
		ContentType:        r.ContentType,
		Header:             w.header,
		TraceHeader:        r.Trace,
		Signer:             w.signer,
		Timeout:            w.timeout,
		InsecureSkipVerify: w.insecure,
		Strict:             w.strict,
		OrderingKey:        r.OrderingKey,
	}
	res := w.c.Do(ctx, &req)
	out := destination.Result{
		Class:      res.Class,
		Status:     res.Status,
		RetryAfter: res.RetryAfter,
		Sent:       res.Sent,
		Latency:    res.Latency,
		Err:        res.Err,
		Response:   res.Response,
	}
	if res.Class != Success {
		out.Reason = res.Reason()
	}
	return out
}

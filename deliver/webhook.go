package deliver

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/reach"
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
	proxy    string
	creds    *reach.Credentials
	route    *route
	openErr  error // the auth or proxy could not be opened: every Send is Rejected
}

var _ destination.Destination = (*Webhook)(nil)

// Open returns the webhook destination of ep, which sends through c. It
// never fails: an invalid URL, auth or proxy is refused by each Send
// ([Rejected]), as [Client.Do] refuses it. An OAuth2 endpoint reopened
// with the same auth keeps its token.
func (c *Client) Open(ep destination.Endpoint) *Webhook {
	w := &Webhook{
		c:        c,
		url:      ep.URL,
		header:   ep.Header,
		signer:   ep.Signer,
		timeout:  ep.Timeout,
		insecure: ep.InsecureSkipVerify,
		strict:   ep.Strict,
		proxy:    ep.Proxy,
	}
	w.creds, w.openErr = c.credentials(ep)
	if w.openErr == nil {
		w.route, w.openErr = c.routeOf(&Request{Proxy: w.proxy, Credentials: w.creds, InsecureSkipVerify: w.insecure, Strict: w.strict})
	}
	return w
}

// tokenKey names an OAuth2 endpoint's credentials: its id and everything
// its token depends on (the secret included, so a new secret fetches a
// new token).
type tokenKey struct {
	id, tokenURL, clientID, clientSecret, scopes, audience, proxy string
	strict, insecure                                              bool
}

// credentials opens ep's auth; an OAuth2 endpoint's are shared with its
// earlier openings with the same auth, so its token survives a reopen.
func (c *Client) credentials(ep destination.Endpoint) (*reach.Credentials, error) {
	if ep.Auth.IsZero() {
		return nil, nil
	}
	if ep.Auth.Type != reach.OAuth2 {
		return c.openCredentials(ep)
	}
	a := ep.Auth
	k := tokenKey{ep.ID, a.TokenURL, a.ClientID, a.ClientSecret, strings.Join(a.Scopes, " "), a.Audience, ep.Proxy, ep.Strict, ep.InsecureSkipVerify}
	if v, ok := c.tokens.Load(k); ok {
		return v.(*reach.Credentials), nil
	}
	cr, err := c.openCredentials(ep)
	if err != nil {
		return nil, err
	}
	c.forgetTokens(ep.ID, k)
	v, _ := c.tokens.LoadOrStore(k, cr)
	return v.(*reach.Credentials), nil
}

// forgetTokens drops the credentials of endpoint id other than keep's.
func (c *Client) forgetTokens(id string, keep tokenKey) {
	c.tokens.Range(func(k, _ any) bool {
		if tk := k.(tokenKey); tk.id == id && tk != keep {
			c.tokens.Delete(k)
		}
		return true
	})
}

// openCredentials opens ep's auth; OAuth2 tokens are fetched through the
// endpoint's own route (its guard and proxy), following no redirects.
func (c *Client) openCredentials(ep destination.Endpoint) (*reach.Credentials, error) {
	var hc *http.Client
	if ep.Auth.Type == reach.OAuth2 {
		rt, err := c.transportFor(&Request{Proxy: ep.Proxy, InsecureSkipVerify: ep.InsecureSkipVerify, Strict: ep.Strict})
		if err != nil {
			return nil, err
		}
		hc = &http.Client{Transport: rt, CheckRedirect: noRedirect}
	}
	cr, err := reach.Open(ep.Auth, hc, c.tokenOpts...)
	if err != nil {
		return nil, fmt.Errorf("%w: auth: %w", ErrInvalidAuth, err)
	}
	return cr, nil
}

// noRedirect makes an http.Client return a 3xx as it is.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// Send makes one attempt with [Client.Do] and reports its [Outcome] as a
// [destination.Result], with the outcome's [Outcome.Reason] when it is not
// [Success]. r.EventType and r.Tenant are sent as Hookjet-Event-Type and
// Hookjet-Tenant.
func (w *Webhook) Send(ctx context.Context, r destination.Request) destination.Result {
	if w.openErr != nil {
		return destination.Result{Class: Rejected, Sent: time.Now(), Reason: errReason(w.openErr), Err: w.openErr}
	}
	u, header := w.url, w.header
	if r.URL != "" {
		u = r.URL
	}
	if len(r.Header) > 0 { // a transformation's: they override the endpoint's
		header = make(http.Header, len(w.header)+len(r.Header))
		for k, v := range w.header {
			if _, over := r.Header[k]; !over {
				header[k] = v
			}
		}
		maps.Copy(header, r.Header)
	}
	req := Request{
		URL:                u,
		ID:                 r.EventID,
		Body:               r.Payload,
		ContentType:        r.ContentType,
		Header:             header,
		TraceHeader:        r.Trace,
		Signer:             w.signer,
		Timeout:            w.timeout,
		InsecureSkipVerify: w.insecure,
		Strict:             w.strict,
		OrderingKey:        r.OrderingKey,
		EventType:          r.EventType,
		Tenant:             r.Tenant,
		Credentials:        w.creds,
		Proxy:              w.proxy,
		route:              w.route,
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
		Unsent:     res.Unsent,
	}
	if res.Class != Success {
		out.Reason = res.Reason()
	}
	return out
}

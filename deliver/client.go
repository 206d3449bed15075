package deliver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hookjet/hookjet/reach"
	"github.com/hookjet/hookjet/signature"
)

// Defaults of [ClientOptions] and [Request].
const (
	// DefaultTimeout is the request timeout when [Request.Timeout] is zero.
	DefaultTimeout = 15 * time.Second
	// DefaultMaxResponseBytes is how much of a response body is read when
	// [ClientOptions.MaxResponseBytes] is zero.
	DefaultMaxResponseBytes = 64 << 10
	// DefaultUserAgent is sent when [ClientOptions.UserAgent] is empty.
	DefaultUserAgent = "hookjet"

	defaultDialTimeout         = 5 * time.Second
	defaultTLSHandshakeTimeout = 5 * time.Second
	defaultContentType         = "application/json"
	maxResponseHeaderBytes     = 64 << 10
	maxIdleConns               = 16384
	maxIdleConnsPerHost        = 1024
	idleConnTimeout            = 90 * time.Second
	tcpKeepAlive               = 30 * time.Second
)

// Header names set by [Client.Do], from package signature. They are written
// in the lower case the Standard Webhooks specification uses.
const (
	HeaderID        = signature.HeaderID
	HeaderTimestamp = signature.HeaderTimestamp
	HeaderSignature = signature.HeaderSignature
	// HeaderOrderingKey carries the event's ordering key
	// ([Request.OrderingKey]) when it has one.
	HeaderOrderingKey = "Hookjet-Ordering-Key"
	// HeaderEventType carries the event's type ([Request.EventType]).
	HeaderEventType = "Hookjet-Event-Type"
	// HeaderTenant carries the tenant the event names ([Request.Tenant])
	// when it names one.
	HeaderTenant = "Hookjet-Tenant"
)

// ClientOptions configures a [Client]. The zero value is a usable client
// without SSRF protection.
type ClientOptions struct {
	// Guard is applied at dial time to every address connected to; nil
	// means no SSRF protection. Requests never go through a proxy the
	// environment names (HTTP_PROXY), so the guard sees every address
	// dialed; through EgressProxy, the guard judges the target's addresses
	// before the proxy is asked for the one it allowed.
	Guard *Guard
	// EgressProxy is the proxy every request goes through unless its
	// endpoint names another or [reach.None] (security.egress_proxy);
	// nil means none. See [reach.Proxy].
	EgressProxy *url.URL
	// StrictGuard replaces Guard for requests with [Request.Strict]: the
	// guard of endpoints that belong to a tenant, which the operator's
	// opening of private ranges does not reach. Nil means Guard.
	StrictGuard *Guard
	// HTTPSOnly refuses http:// URLs with [ErrInsecureURL] ([Rejected]).
	HTTPSOnly bool
	// UserAgent is the User-Agent header, e.g. "hookjet/0.1.0"; empty means
	// [DefaultUserAgent].
	UserAgent string
	// MaxResponseBytes is how much of each response body is read (and
	// discarded) before the body is closed; 0 means
	// [DefaultMaxResponseBytes], negative means none. A body longer than
	// this costs its connection (it is closed, not reused).
	MaxResponseBytes int64
	// MaxConnsPerHost limits connections per host (dialing, active and
	// idle); 0 means no limit.
	MaxConnsPerHost int
	// Resolver resolves host names; nil means net.DefaultResolver. It is a
	// test seam: production code leaves it nil.
	Resolver *net.Resolver
	// ExcerptBytes is how much of a non-2xx response body [Result.Response]
	// keeps (the delivery log's log.response_bytes); 0 keeps none. It is
	// part of the MaxResponseBytes that are read, never more.
	ExcerptBytes int
	// DialTimeout bounds establishing a TCP connection; 0 means 5s.
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake; 0 means 5s.
	TLSHandshakeTimeout time.Duration
	// Clock is what OAuth2 token expiry is read against; nil means
	// time.Now. A test seam.
	Clock func() time.Time
}

// Request is one delivery attempt to make.
type Request struct {
	// URL is the endpoint's URL, http:// or https://.
	URL string
	// ID is the webhook-id: the event id, identical on every retry.
	ID string
	// Body is the payload, sent byte for byte. It must not be modified
	// while [Client.Do] runs.
	Body []byte
	// ContentType is the Content-Type header; empty means application/json.
	ContentType string
	// Header holds the endpoint's extra headers (canonical keys). Their
	// values are secret and never appear in errors or reasons. They cannot
	// override webhook-id, webhook-timestamp, webhook-signature,
	// Content-Type, Content-Length, Transfer-Encoding, Host or Connection;
	// they may override User-Agent. The value slices are sent as they are
	// (not copied) and must not be modified while [Client.Do] runs.
	Header http.Header
	// TraceHeader holds per-attempt headers that carry the trace context
	// (traceparent, tracestate; see package tracing); nil, the untraced
	// case, costs nothing. The same names as for Header are dropped; its
	// values are not secret.
	TraceHeader http.Header
	// Signer signs the request; nil (or a Signer without keys) sends no
	// webhook-signature header.
	Signer *Signer
	// Timeout bounds the whole attempt, from dialing to reading the capped
	// response body; 0 means [DefaultTimeout].
	Timeout time.Duration
	// InsecureSkipVerify turns TLS certificate verification off for this
	// request. Such requests use a separate connection pool.
	InsecureSkipVerify bool
	// Strict dials through [ClientOptions.StrictGuard] instead of
	// [ClientOptions.Guard]. Such requests use a separate connection pool,
	// so no connection the operator's guard allowed is reused for them.
	Strict bool
	// OrderingKey is the event's ordering key, sent as Hookjet-Ordering-Key
	// (in place of an extra header of that name); empty sends none. The
	// caller checks it: it becomes a header value as it is.
	OrderingKey string
	// EventType is the event's type, sent as Hookjet-Event-Type; empty
	// sends none. Tenant is the tenant the event names, sent as
	// Hookjet-Tenant; empty sends none. The caller checks both: they become
	// header values as they are.
	EventType, Tenant string
	// Credentials authenticate the request (the Authorization header, in
	// place of an extra header of that name, or a TLS client
	// certificate); nil means none. An OAuth2 token the receiver refuses
	// with 401 is dropped and the request sent once more with a new one.
	Credentials *reach.Credentials
	// Proxy is the request's egress proxy: "" means
	// [ClientOptions.EgressProxy], [reach.None] none, otherwise an http://
	// URL ([reach.ParseProxy]).
	Proxy string

	route *route // resolved by Client.Open for its Webhook; nil: resolved by Do
}

// Result is the outcome of one attempt made by [Client.Do].
type Result struct {
	Outcome
	// Latency is the time from sending the request to having read the
	// response headers and the capped body.
	Latency time.Duration
	// Sent is when the attempt started; its Unix seconds are the
	// webhook-timestamp that was signed.
	Sent time.Time
	// Response is the start of a non-2xx response body, at most
	// [ClientOptions.ExcerptBytes]; nil for a 2xx or without a response.
	Response []byte
	// Unsent reports that no request was sent: the endpoint's
	// credentials could not be obtained (an OAuth2 token fetch failed; Err
	// is a [*reach.TokenError]).
	Unsent bool
}

// Client sends webhook requests over keep-alive connections. It is safe for
// concurrent use and meant to be shared by all workers of a process.
//
// Redirects are never followed (a 3xx is [Permanent]); at most
// [ClientOptions.MaxResponseBytes] of a response is read.
type Client struct {
	guard     *Guard
	httpsOnly bool
	maxBody   int64
	excerpt   int
	userAgent []string
	opts      ClientOptions
	// variants holds one transport per combination of InsecureSkipVerify
	// and Strict (index insecure + 2*strict), created on first use.
	variants [4]variant
	// routes holds the round trippers of requests through a proxy or with
	// a client certificate, one per route, created on first use and kept
	// for the client's life (there are as many as distinct proxies and
	// certificates, not endpoints).
	routes sync.Map // route -> *routeTransport
	// tokens holds each OAuth2 endpoint's credentials, so that reopening
	// an endpoint whose auth did not change keeps its token.
	tokens    sync.Map // tokenKey -> *reach.Credentials
	tokenOpts []reach.Option
}

// variant is a lazily built transport.
type variant struct {
	once sync.Once
	tr   atomic.Pointer[http.Transport]
}

// NewClient returns a Client configured by opts.
func NewClient(opts ClientOptions) *Client {
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = defaultDialTimeout
	}
	if opts.TLSHandshakeTimeout <= 0 {
		opts.TLSHandshakeTimeout = defaultTLSHandshakeTimeout
	}
	if opts.UserAgent == "" {
		opts.UserAgent = DefaultUserAgent
	}
	maxBody := opts.MaxResponseBytes
	switch {
	case maxBody == 0:
		maxBody = DefaultMaxResponseBytes
	case maxBody < 0:
		maxBody = 0
	}
	c := &Client{
		guard:     opts.Guard,
		httpsOnly: opts.HTTPSOnly,
		maxBody:   maxBody,
		excerpt:   max(0, min(opts.ExcerptBytes, int(maxBody))),
		userAgent: []string{opts.UserAgent},
		opts:      opts,
	}
	if opts.Clock != nil {
		c.tokenOpts = append(c.tokenOpts, reach.WithClock(opts.Clock))
	}
	c.roundTripper(false, false) // the common case is built eagerly
	return c
}

// CloseIdleConnections closes every idle keep-alive connection.
func (c *Client) CloseIdleConnections() {
	for i := range c.variants {
		if tr := c.variants[i].tr.Load(); tr != nil {
			tr.CloseIdleConnections()
		}
	}
	c.routes.Range(func(_, v any) bool {
		v.(*routeTransport).closeIdle()
		return true
	})
}

// roundTripper returns the round tripper for a combination of options.
//
// Requests go straight to the RoundTripper rather than through an
// http.Client: a RoundTripper never follows redirects (so a 3xx reaches
// [Classify] as it is), and it skips http.Client's per-request work meant
// for redirects and cookies (a copy of every header map, among others).
func (c *Client) roundTripper(insecure, strict bool) http.RoundTripper {
	i := 0
	if insecure {
		i = 1
	}
	if strict {
		i += 2
	}
	v := &c.variants[i]
	v.once.Do(func() {
		v.tr.Store(c.newTransport(insecure, strict))
	})
	return v.tr.Load()
}

// newTransport returns a transport tuned for many keep-alive deliveries.
func (c *Client) newTransport(insecure, strict bool) *http.Transport {
	d := c.dialer()
	if g := c.guardFor(strict); g != nil {
		d.ControlContext = g.control
	}
	tr := c.baseTransport(insecure)
	tr.DialContext = d.DialContext
	return tr
}

// dialer returns a dialer with the client's timeouts and resolver.
func (c *Client) dialer() *net.Dialer {
	return &net.Dialer{
		Timeout:   c.opts.DialTimeout,
		KeepAlive: tcpKeepAlive,
		Resolver:  c.opts.Resolver,
	}
}

// guardFor returns the guard of strict or other requests; nil for none.
func (c *Client) guardFor(strict bool) *Guard {
	if strict && c.opts.StrictGuard != nil {
		return c.opts.StrictGuard
	}
	return c.guard
}

// baseTransport returns a transport tuned for many keep-alive deliveries,
// without a dialer.
func (c *Client) baseTransport(insecure bool) *http.Transport {
	tr := &http.Transport{
		ForceAttemptHTTP2: true,
		// Connections are reused, never churned: thousands of workers may
		// deliver to one endpoint.
		MaxIdleConns:        maxIdleConns,
		MaxIdleConnsPerHost: maxIdleConnsPerHost,
		MaxConnsPerHost:     c.opts.MaxConnsPerHost,
		IdleConnTimeout:     idleConnTimeout,
		TLSHandshakeTimeout: c.opts.TLSHandshakeTimeout,
		// The response-header wait is bounded by each request's own
		// deadline (Request.Timeout), which differs per endpoint.
		MaxResponseHeaderBytes: maxResponseHeaderBytes,
		// Bodies are discarded: do not ask for compression.
		DisableCompression: true,
		TLSClientConfig: &tls.Config{
			MinVersion:         tls.VersionTLS12,
			InsecureSkipVerify: insecure, //nolint:gosec // per-endpoint opt-in
		},
	}
	return tr
}

// Do makes one delivery attempt and classifies it. It never returns an
// error: failures are in the [Outcome], whose Err and Reason contain neither
// the body, header values nor the URL's query. The attempt is bounded by
// r.Timeout and by ctx; when ctx is canceled the outcome is [Transient] and
// its Err wraps context.Canceled.
func (c *Client) Do(ctx context.Context, r *Request) Result {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	sent := time.Now()
	res := Result{Sent: sent}
	resp, err := c.do(ctx, r, sent)
	if _, ok := errors.AsType[*reach.TokenError](err); ok {
		res.Unsent = true
	}
	if err == nil {
		var n int64
		n, res.Response, err = c.readBody(resp)
		if errors.Is(err, io.EOF) || (err == nil && n == c.maxBody) {
			err = nil // short body, or the cap was reached
		}
		_ = resp.Body.Close() // nothing to do about a failed close of a read body
	}
	end := time.Now()
	res.Latency = end.Sub(sent)
	if err != nil {
		if ctx.Err() != nil && parent.Err() == nil {
			err = &TimeoutError{After: timeout, Err: err}
		}
	}
	res.Outcome = Classify(resp, err, end)
	return res
}

// readBody reads at most maxBody of resp's body and keeps the excerpt of a
// non-2xx one. A 2xx body is discarded without a copy.
func (c *Client) readBody(resp *http.Response) (int64, []byte, error) {
	if c.excerpt == 0 || (resp.StatusCode >= 200 && resp.StatusCode < 300) {
		n, err := io.CopyN(io.Discard, resp.Body, c.maxBody)
		return n, nil, err
	}
	buf := make([]byte, c.excerpt)
	k, err := io.ReadFull(resp.Body, buf)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
		return int64(k), buf[:k], err
	}
	n, err := io.CopyN(io.Discard, resp.Body, c.maxBody-int64(k))
	return n + int64(k), buf, err
}

// do builds and sends the request: with its credentials, through its
// route. A receiver's 401 to an OAuth2 token drops the token and sends
// the request once more with a new one.
func (c *Client) do(ctx context.Context, r *Request, sent time.Time) (*http.Response, error) {
	rt, err := c.transportFor(r)
	if err != nil {
		return nil, err
	}
	req, err := c.newRequest(ctx, r, sent.Unix())
	if err != nil {
		return nil, err
	}
	tok, err := r.Credentials.Authorize(ctx, req.Header)
	if err != nil {
		return nil, err
	}
	resp, err := rt.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || tok == "" {
		return resp, err
	}
	_, _, _ = c.readBody(resp) // the refusal is not kept: a new token is asked for
	_ = resp.Body.Close()
	r.Credentials.Drop(tok)
	if req, err = c.newRequest(ctx, r, sent.Unix()); err != nil {
		return nil, err
	}
	if _, err := r.Credentials.Authorize(ctx, req.Header); err != nil {
		return nil, err
	}
	return rt.RoundTrip(req)
}

// newRequest builds the POST request with few allocations.
func (c *Client) newRequest(ctx context.Context, r *Request, ts int64) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidURL, unwrapURLError(err))
	}
	switch req.URL.Scheme {
	case "https":
	case "http":
		if c.httpsOnly {
			return nil, ErrInsecureURL
		}
	default:
		return nil, fmt.Errorf("%w: scheme must be http or https", ErrInvalidURL)
	}
	if req.URL.Host == "" {
		return nil, fmt.Errorf("%w: no host", ErrInvalidURL)
	}

	body := r.Body
	req.ContentLength = int64(len(body))
	if len(body) > 0 {
		req.Body = newBodyReader(body)
		req.GetBody = func() (io.ReadCloser, error) { return newBodyReader(body), nil }
	} else {
		req.Body = http.NoBody
		req.GetBody = func() (io.ReadCloser, error) { return http.NoBody, nil }
	}

	h := make(http.Header, len(r.Header)+len(r.TraceHeader)+9)
	for k, v := range r.Header {
		if !reservedHeader(k) {
			h[k] = v
		}
	}
	for k, v := range r.TraceHeader {
		if !reservedHeader(k) {
			h[k] = v
		}
	}
	// A stale keep-alive connection may be closed by the receiver just as
	// a request is written. Receivers dedupe on webhook-id, so the request
	// is safe to replay: an empty Idempotency-Key entry tells the transport
	// so without being sent on the wire.
	if _, ok := h["Idempotency-Key"]; !ok {
		h["Idempotency-Key"] = []string{}
	}
	if _, ok := h["User-Agent"]; !ok {
		h["User-Agent"] = c.userAgent
	}

	// One allocation holds the timestamp and the signature.
	var scratch [128]byte
	buf := strconv.AppendInt(scratch[:0], ts, 10)
	nts := len(buf)
	if r.Signer != nil {
		buf = r.Signer.AppendSign(buf, r.ID, ts, body)
	}
	s := string(buf)
	vals := make([]string, 7)
	vals[0], vals[1], vals[2] = r.ID, s[:nts], s[nts:]
	vals[3], vals[4] = r.ContentType, r.OrderingKey
	vals[5], vals[6] = r.EventType, r.Tenant
	if vals[3] == "" {
		vals[3] = defaultContentType
	}
	h[HeaderID] = vals[0:1:1]
	h[HeaderTimestamp] = vals[1:2:2]
	if len(vals[2]) > 0 {
		h[HeaderSignature] = vals[2:3:3]
	}
	h["Content-Type"] = vals[3:4:4]
	if vals[4] != "" {
		h[HeaderOrderingKey] = vals[4:5:5]
	}
	if vals[5] != "" {
		h[HeaderEventType] = vals[5:6:6]
	}
	if vals[6] != "" {
		h[HeaderTenant] = vals[6:7:7]
	}
	req.Header = h
	return req, nil
}

// reservedHeader reports whether an extra header named k must be dropped
// because hookjet sets it (or the transport owns it). Hookjet-Event-Type
// and Hookjet-Tenant are dropped even when the event has none, so that a
// receiver can trust them.
func reservedHeader(k string) bool {
	switch textproto.CanonicalMIMEHeaderKey(k) {
	case "Webhook-Id", "Webhook-Timestamp", "Webhook-Signature", HeaderEventType, HeaderTenant,
		"Content-Type", "Content-Length", "Transfer-Encoding", "Host", "Connection":
		return true
	}
	return false
}

// newBodyReader returns a request body over b without copying it. It is an
// io.NopCloser around a *bytes.Reader on purpose: net/http recognises that
// pair as an in-memory body and writes headers and body in one write, where
// any other type costs a separate flush and syscall per request.
func newBodyReader(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

// unwrapURLError returns the cause of a *url.Error, whose message would
// otherwise repeat the URL.
func unwrapURLError(err error) error {
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Err
	}
	return err
}

package deliver

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"

	"github.com/hookjet/hookjet/reach"
)

// routeKey names the round tripper of requests that share a proxy, a
// client certificate and the TLS and guard variant.
type routeKey struct {
	proxy    string   // the proxy's URL; "" none
	cert     [32]byte // SHA-256 of the client certificate's leaf; zero none
	insecure bool
	strict   bool
}

// route is where a request goes: a key and what builds its transport.
type route struct {
	key   routeKey
	proxy *url.URL
	cert  *tls.Certificate
}

// direct reports whether the route is one of the client's variants: no
// proxy and no client certificate.
func (r *route) direct() bool { return r.proxy == nil && r.cert == nil }

// routeOf resolves a request's proxy and certificate into its route.
func (c *Client) routeOf(r *Request) (*route, error) {
	rt := &route{key: routeKey{insecure: r.InsecureSkipVerify, strict: r.Strict}}
	switch r.Proxy {
	case "":
		rt.proxy = c.opts.EgressProxy
	case reach.None:
	default:
		u, err := reach.ParseProxy(r.Proxy)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidProxy, err)
		}
		rt.proxy = u
	}
	if rt.proxy != nil {
		rt.key.proxy = rt.proxy.String()
	}
	if cert := r.Credentials.Certificate(); cert != nil && len(cert.Certificate) > 0 {
		rt.cert = cert
		rt.key.cert = sha256.Sum256(cert.Certificate[0])
	}
	return rt, nil
}

// transportFor returns the round tripper of r's route.
func (c *Client) transportFor(r *Request) (http.RoundTripper, error) {
	rt := r.route
	if rt == nil && r.Credentials.Certificate() == nil &&
		(r.Proxy == reach.None || (r.Proxy == "" && c.opts.EgressProxy == nil)) {
		return c.roundTripper(r.InsecureSkipVerify, r.Strict), nil // the common case, without allocating
	}
	if rt == nil {
		var err error
		if rt, err = c.routeOf(r); err != nil {
			return nil, err
		}
	}
	if rt.direct() {
		return c.roundTripper(rt.key.insecure, rt.key.strict), nil
	}
	if v, ok := c.routes.Load(rt.key); ok {
		return v.(*routeTransport), nil
	}
	t := &routeTransport{c: c, r: rt}
	t.build()
	v, _ := c.routes.LoadOrStore(rt.key, t)
	return v.(*routeTransport), nil
}

// routeTransport sends the requests of one route: with a client
// certificate, and through a proxy (https tunnelled by CONNECT to the
// checked address, http in absolute form to it).
type routeTransport struct {
	c *Client
	r *route

	direct *http.Transport // no proxy
	tunnel *http.Transport // https through the proxy
	plain  *http.Transport // http through the proxy
	proxy  *reach.Proxy
}

func (t *routeTransport) build() {
	c, k := t.c, t.r.key
	g := c.guardFor(k.strict)
	withCert := func(tr *http.Transport) *http.Transport {
		if t.r.cert != nil {
			tr.TLSClientConfig.Certificates = []tls.Certificate{*t.r.cert}
		}
		return tr
	}
	if t.r.proxy == nil {
		d := c.dialer()
		if g != nil {
			d.ControlContext = g.control
		}
		t.direct = withCert(c.baseTransport(k.insecure))
		t.direct.DialContext = d.DialContext
		return
	}
	t.proxy = &reach.Proxy{URL: t.r.proxy, Resolver: c.opts.Resolver, Dialer: c.dialer()}
	if g != nil {
		t.proxy.Check = g.Check
	}
	t.tunnel = withCert(c.baseTransport(k.insecure))
	t.tunnel.DialContext = t.proxy.DialContext
	t.plain = c.baseTransport(k.insecure)
	t.plain.Proxy = http.ProxyURL(t.r.proxy)
	t.plain.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
		return t.proxy.DialProxy(ctx, network)
	}
}

// RoundTrip sends req on its route. An http request through the proxy
// goes to the address the guard checked: the proxy is never left to
// resolve the name itself.
func (t *routeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.direct != nil {
		return t.direct.RoundTrip(req)
	}
	if req.URL.Scheme != "http" {
		return t.tunnel.RoundTrip(req)
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
	}
	addr, err := t.proxy.Resolve(req.Context(), req.URL.Hostname(), port)
	if err != nil {
		return nil, err
	}
	r2 := req.WithContext(req.Context()) // a shallow copy: headers and body are shared
	u := *req.URL
	u.Host = addr
	r2.URL, r2.Host = &u, ""
	return t.plain.RoundTrip(r2)
}

// closeIdle closes the route's idle connections.
func (t *routeTransport) closeIdle() {
	for _, tr := range []*http.Transport{t.direct, t.tunnel, t.plain} {
		if tr != nil {
			tr.CloseIdleConnections()
		}
	}
}

package reach

import (
	"bufio"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// None is the per-endpoint proxy value that sends directly, whatever the
// egress proxy.
const None = "none"

// ParseProxy parses an egress proxy URL: http://host:port, optionally with
// user:password (sent as Proxy-Authorization). Errors never contain the
// password.
func ParseProxy(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New(`must be a URL such as "http://proxy.internal:3128" or "none"`)
	}
	if u.Scheme != "http" {
		return nil, errors.New(`must be an http:// URL such as "http://proxy.internal:3128" (the proxy is spoken to in plain HTTP; https targets are tunnelled) or "none"`)
	}
	if u.Hostname() == "" {
		return nil, errors.New("must name a host")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, errors.New("must have a port between 1 and 65535")
		}
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("must be http://host:port without a path, query or fragment")
	}
	return u, nil
}

// Proxy dials targets through an HTTP egress proxy, resolving and
// checking them itself so that the proxy is asked for the checked address.
// The zero Proxy is not usable: URL is required.
type Proxy struct {
	// URL is the proxy, from [ParseProxy].
	URL *url.URL
	// Check judges every address a target name resolves to; nil allows
	// all (no SSRF protection). Its error is returned as it is.
	Check func(netip.Addr) error
	// Resolver resolves target names; nil means net.DefaultResolver.
	Resolver *net.Resolver
	// Dialer dials the proxy; nil means a net.Dialer with a 5s timeout.
	// The proxy's own address is not checked: an operator chose it.
	Dialer *net.Dialer
}

// Resolve returns the first address of host that Check allows, as
// "ip:port" (IPv6 in brackets), or the refusal of the first address when
// none is allowed.
func (p *Proxy) Resolve(ctx context.Context, host, port string) (string, error) {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		r := p.Resolver
		if r == nil {
			r = net.DefaultResolver
		}
		if addrs, err = r.LookupNetIP(ctx, "ip", host); err != nil {
			return "", err
		}
	}
	var first error
	for _, a := range addrs {
		a = a.Unmap()
		var err error
		if p.Check != nil {
			err = p.Check(a)
		}
		if err == nil {
			return hostPort(a, port), nil
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		first = &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	return "", first
}

func hostPort(a netip.Addr, port string) string {
	return net.JoinHostPort(a.WithZone("").String(), port)
}

// DialContext dials addr ("name:port") through the proxy: it resolves and
// checks the name ([Proxy.Resolve]), dials the proxy and asks it to
// CONNECT to the checked address. The connection it returns is the
// tunnel; the caller speaks TLS over it with the name as SNI. It has the
// signature of http.Transport's DialContext.
func (p *Proxy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	target, err := p.Resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	conn, err := p.DialProxy(ctx, network)
	if err != nil {
		return nil, err
	}
	if err := p.connect(ctx, conn, target); err != nil {
		_ = conn.Close() // the tunnel failed: nothing to keep
		return nil, err
	}
	return conn, nil
}

// DialProxy dials the proxy itself.
func (p *Proxy) DialProxy(ctx context.Context, network string) (net.Conn, error) {
	d := p.Dialer
	if d == nil {
		d = &net.Dialer{Timeout: 5 * time.Second}
	}
	conn, err := d.DialContext(ctx, network, p.Address())
	if err != nil {
		return nil, fmt.Errorf("egress proxy: %w", err)
	}
	return conn, nil
}

// Address returns the proxy's host:port, port 80 when the URL names none.
func (p *Proxy) Address() string {
	port := p.URL.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(p.URL.Hostname(), port)
}

// Authorization returns the Proxy-Authorization value of a URL with user
// info; "" without.
func (p *Proxy) Authorization() string {
	if p.URL.User == nil {
		return ""
	}
	pw, _ := p.URL.User.Password()
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(p.URL.User.Username()+":"+pw))
}

// connect asks the proxy on conn for a tunnel to target and reads its
// answer, bounded by ctx.
func (p *Proxy) connect(ctx context.Context, conn net.Conn, target string) error {
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl) // a failed deadline shows as a failed read
		defer func() { _ = conn.SetDeadline(time.Time{}) }()
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if a := p.Authorization(); a != "" {
		req += "Proxy-Authorization: " + a + "\r\n"
	}
	req += "\r\n"
	if _, err := conn.Write([]byte(req)); err != nil {
		return fmt.Errorf("egress proxy: %w", ctxErr(ctx, err))
	}
	// One byte at a time: nothing of the tunnel may be read into a buffer
	// the caller would not see (the proxy sends nothing before the
	// client's first TLS record, but a reader must not rely on it).
	br := bufio.NewReaderSize(oneByte{conn}, 1)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		return fmt.Errorf("egress proxy: %w", ctxErr(ctx, err))
	}
	_ = resp.Body.Close() // a CONNECT answer has no body to read: the tunnel follows
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &ProxyError{Status: resp.StatusCode}
	}
	return nil
}

// ctxErr prefers ctx's error to the I/O error its deadline caused.
func ctxErr(ctx context.Context, err error) error {
	if ce := ctx.Err(); ce != nil {
		return ce
	}
	return err
}

// oneByte reads at most one byte per Read.
type oneByte struct{ c net.Conn }

func (o oneByte) Read(b []byte) (int, error) {
	if len(b) > 1 {
		b = b[:1]
	}
	return o.c.Read(b)
}

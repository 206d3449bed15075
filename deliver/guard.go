package deliver

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"syscall"
)

// Guard decides which IP addresses hookjet may connect to (SSRF protection).
// The zero value behaves like NewGuard(false, nil). A Guard is immutable and
// safe for concurrent use.
//
// By default a Guard refuses every address that is not globally routable
// unicast: loopback, private (RFC 1918), unique local (fc00::/7),
// link-local (169.254.0.0/16 including the cloud metadata address
// 169.254.169.254, fe80::/10), shared CGNAT (100.64.0.0/10), multicast,
// unspecified, broadcast, reserved (0.0.0.0/8, 240.0.0.0/4 and IPv6
// equivalents), documentation, benchmarking and IETF protocol ranges, and
// Teredo. IPv6 addresses that embed an IPv4 address (IPv4-mapped
// ::ffff:a.b.c.d, NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the
// embedded address.
type Guard struct {
	allowPrivate bool
	allow        []netip.Prefix
	why          string // appended to refusals; see Because
}

// NewGuard returns a Guard. With allowPrivate it allows every address except
// unspecified (0.0.0.0, ::) and multicast ones, which are never valid
// webhook destinations. Addresses inside a prefix of allow are always
// allowed, overriding every other rule; IPv4 prefixes also match
// IPv4-mapped IPv6 addresses.
func NewGuard(allowPrivate bool, allow []netip.Prefix) *Guard {
	g := &Guard{allowPrivate: allowPrivate, allow: make([]netip.Prefix, 0, len(allow))}
	for _, p := range allow {
		if p.IsValid() {
			g.allow = append(g.allow, p.Masked())
		}
	}
	return g
}

// Because returns a copy of g whose refusals also say why they apply, e.g.
// "refused: 127.0.0.1 is a loopback address (the endpoint belongs to a
// tenant: portal.allow_private_networks is off)".
func (g *Guard) Because(why string) *Guard {
	c := *g
	c.why = why
	return &c
}

// rangeRule is one refused range.
type rangeRule struct {
	prefix netip.Prefix
	kind   string // with its article: "a private address"
	// always means the range is refused even with allowPrivate.
	always bool
}

// Kinds of refused ranges, with articles, as they appear in errors.
const (
	kindUnspecified = "an unspecified address"
	kindMulticast   = "a multicast address"
	kindLoopback    = "a loopback address"
	kindPrivate     = "a private address"
	kindULA         = "a unique local address"
	kindLinkLocal   = "a link-local address"
	kindShared      = "a shared (CGNAT) address"
	kindBroadcast   = "a broadcast address"
	kindReserved    = "a reserved address"
	kindDoc         = "a documentation address"
	kindBench       = "a benchmarking address"
	kindIETF        = "an IETF protocol address"
	kindTeredo      = "a Teredo address"
	kindInvalid     = "an invalid address"
)

// rules are checked in order; the first match decides. Specific ranges come
// before the ranges that contain them.
var rules = []rangeRule{
	// IPv4.
	{prefix: mustPrefix("0.0.0.0/32"), kind: kindUnspecified, always: true},
	{prefix: mustPrefix("0.0.0.0/8"), kind: kindReserved},
	{prefix: mustPrefix("10.0.0.0/8"), kind: kindPrivate},
	{prefix: mustPrefix("100.64.0.0/10"), kind: kindShared},
	{prefix: mustPrefix("127.0.0.0/8"), kind: kindLoopback},
	{prefix: mustPrefix("169.254.0.0/16"), kind: kindLinkLocal},
	{prefix: mustPrefix("172.16.0.0/12"), kind: kindPrivate},
	{prefix: mustPrefix("192.0.0.0/24"), kind: kindIETF},
	{prefix: mustPrefix("192.0.2.0/24"), kind: kindDoc},
	{prefix: mustPrefix("192.88.99.0/24"), kind: kindReserved}, // former 6to4 relay anycast
	{prefix: mustPrefix("192.168.0.0/16"), kind: kindPrivate},
	{prefix: mustPrefix("198.18.0.0/15"), kind: kindBench},
	{prefix: mustPrefix("198.51.100.0/24"), kind: kindDoc},
	{prefix: mustPrefix("203.0.113.0/24"), kind: kindDoc},
	{prefix: mustPrefix("224.0.0.0/4"), kind: kindMulticast, always: true},
	{prefix: mustPrefix("255.255.255.255/32"), kind: kindBroadcast},
	{prefix: mustPrefix("240.0.0.0/4"), kind: kindReserved},

	// IPv6. IPv4-mapped addresses are unmapped before the rules are applied,
	// and NAT64 and 6to4 addresses are judged by their embedded IPv4 address.
	{prefix: mustPrefix("::/128"), kind: kindUnspecified, always: true},
	{prefix: mustPrefix("::1/128"), kind: kindLoopback},
	{prefix: mustPrefix("::/96"), kind: kindReserved},           // IPv4-compatible (deprecated)
	{prefix: mustPrefix("::ffff:0:0:0/96"), kind: kindReserved}, // IPv4-translated (SIIT)
	{prefix: mustPrefix("64:ff9b:1::/48"), kind: kindPrivate},   // local-use NAT64 (RFC 8215)
	{prefix: mustPrefix("100::/64"), kind: kindReserved},        // discard-only
	{prefix: mustPrefix("2001::/32"), kind: kindTeredo},
	{prefix: mustPrefix("2001:2::/48"), kind: kindBench},
	{prefix: mustPrefix("2001:10::/28"), kind: kindReserved}, // ORCHID (deprecated)
	{prefix: mustPrefix("2001:20::/28"), kind: kindReserved}, // ORCHIDv2
	{prefix: mustPrefix("2001:db8::/32"), kind: kindDoc},
	{prefix: mustPrefix("3fff::/20"), kind: kindDoc},
	{prefix: mustPrefix("5f00::/16"), kind: kindReserved}, // SRv6 SIDs
	{prefix: mustPrefix("fc00::/7"), kind: kindULA},
	{prefix: mustPrefix("fe80::/10"), kind: kindLinkLocal},
	{prefix: mustPrefix("fec0::/10"), kind: kindReserved}, // site-local (deprecated)
	{prefix: mustPrefix("ff00::/8"), kind: kindMulticast, always: true},
}

var (
	nat64   = mustPrefix("64:ff9b::/96")
	sixToV4 = mustPrefix("2002::/16")
)

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// Check returns nil if ip may be connected to, and otherwise a
// [*RefusedError] (wrapping [ErrRefused]) naming the address and the kind of
// range it falls in, e.g. "refused: 10.0.0.5 is a private address".
func (g *Guard) Check(ip netip.Addr) error {
	kind := g.refusal(ip)
	if kind == "" {
		return nil
	}
	return &RefusedError{Addr: ip, Kind: kind, Why: g.why}
}

// CheckHost judges the host of an endpoint URL before any delivery: a
// literal IP address as [Guard.Check] does, and "localhost" or a name
// under .localhost (RFC 6761: always the loopback address) as 127.0.0.1.
// It returns nil for every other name: what a name resolves to is judged
// at each dial, since DNS may change. A refusal here means no delivery to
// the URL can ever be made.
func (g *Guard) CheckHost(host string) error {
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return g.Check(ip)
	}
	lower := strings.ToLower(host)
	if lower != "localhost" && !strings.HasSuffix(lower, ".localhost") {
		return nil
	}
	err := g.Check(netip.AddrFrom4([4]byte{127, 0, 0, 1}))
	if re, ok := errors.AsType[*RefusedError](err); ok {
		re.Name = host
	}
	return err
}

// refusal returns the kind of the refused range ip falls in, or "" when ip
// is allowed.
func (g *Guard) refusal(ip netip.Addr) string {
	if !ip.IsValid() {
		return kindInvalid
	}
	ip = ip.WithZone("").Unmap()
	if g.allowed(ip) {
		return ""
	}
	if ip.Is6() {
		var v4 netip.Addr
		var via string
		switch {
		case nat64.Contains(ip):
			b := ip.As16()
			v4, via = netip.AddrFrom4([4]byte(b[12:16])), "a NAT64 address embedding "
		case sixToV4.Contains(ip):
			b := ip.As16()
			v4, via = netip.AddrFrom4([4]byte(b[2:6])), "a 6to4 address embedding "
		}
		if v4.IsValid() {
			if kind := g.refusal(v4); kind != "" {
				return via + v4.String() + " (" + kind + ")"
			}
			return ""
		}
	}
	for i := range rules {
		r := &rules[i]
		if r.prefix.Contains(ip) {
			if g.allowPrivate && !r.always {
				return ""
			}
			return r.kind
		}
	}
	return ""
}

// allowed reports whether ip is inside an allow prefix.
func (g *Guard) allowed(ip netip.Addr) bool {
	for _, p := range g.allow {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// control is a net.Dialer ControlContext function that applies the guard to
// the address actually being connected to.
func (g *Guard) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &RefusedError{Kind: kindInvalid}
	}
	return g.Check(ap.Addr())
}

package deliver

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"
)

func TestGuardCheck(t *testing.T) {
	defaults := NewGuard(false, nil)
	private := NewGuard(true, nil)
	allowList := NewGuard(false, []netip.Prefix{
		netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("fd00:1::/32"),
		netip.MustParsePrefix("192.0.2.1/32"),
		netip.MustParsePrefix("224.0.0.0/4"),
		netip.MustParsePrefix("64:ff9b::a00:0/104"), // NAT64 of 10.0.0.0/8
	})

	tests := []struct {
		addr string
		// want is the refused kind for the default guard ("" = allowed).
		want string
		// withPrivate is the refused kind with allowPrivate.
		withPrivate string
		// allowListed: allowed by allowList rather than by default (else as default).
		allowListed bool
	}{
		// Public addresses.
		{addr: "8.8.8.8"},
		{addr: "1.1.1.1"},
		{addr: "93.184.216.34"},
		{addr: "2606:4700::1111"},
		{addr: "2a00:1450:4001::200e"},
		{addr: "::ffff:8.8.8.8"},       // IPv4-mapped public
		{addr: "64:ff9b::808:808"},     // NAT64 of 8.8.8.8
		{addr: "2002:808:808::1"},      // 6to4 of 8.8.8.8
		{addr: "100.63.255.255"},       // just below CGNAT
		{addr: "100.128.0.0"},          // just above CGNAT
		{addr: "172.15.255.255"},       // just below 172.16/12
		{addr: "172.32.0.0"},           // just above 172.16/12
		{addr: "198.17.255.255"},       // just below benchmarking
		{addr: "198.20.0.0"},           // just above benchmarking
		{addr: "223.255.255.255"},      // last unicast before multicast
		{addr: "2001:4860:4860::8888"}, // outside 2001::/23 specials
		{addr: "fe7f:ffff::1"},         // not link-local (below fe80::/10)

		// Loopback.
		{addr: "127.0.0.1", want: kindLoopback},
		{addr: "127.255.255.254", want: kindLoopback},
		{addr: "::1", want: kindLoopback},
		{addr: "::ffff:127.0.0.1", want: kindLoopback},
		// RFC 1918.
		{addr: "10.0.0.5", want: kindPrivate},
		{addr: "10.1.2.3", want: kindPrivate, allowListed: true},
		{addr: "::ffff:10.1.2.3", want: kindPrivate, allowListed: true},
		{addr: "172.16.0.1", want: kindPrivate},
		{addr: "172.31.255.255", want: kindPrivate},
		{addr: "192.168.1.1", want: kindPrivate},
		{addr: "::ffff:192.168.1.1", want: kindPrivate},
		// Unique local.
		{addr: "fc00::1", want: kindULA},
		{addr: "fd12:3456::1", want: kindULA},
		{addr: "fd00:1:2::3", want: kindULA, allowListed: true},
		// Link-local, including cloud metadata.
		{addr: "169.254.169.254", want: kindLinkLocal},
		{addr: "169.254.0.1", want: kindLinkLocal},
		{addr: "fe80::1", want: kindLinkLocal},
		{addr: "fe80::1%eth0", want: kindLinkLocal},
		{addr: "febf::1", want: kindLinkLocal},
		// CGNAT.
		{addr: "100.64.0.1", want: kindShared},
		{addr: "100.127.255.255", want: kindShared},
		// Multicast: refused even with allowPrivate.
		{addr: "224.0.0.1", want: kindMulticast, withPrivate: kindMulticast, allowListed: true},
		{addr: "239.255.255.250", want: kindMulticast, withPrivate: kindMulticast, allowListed: true},
		{addr: "ff02::1", want: kindMulticast, withPrivate: kindMulticast},
		{addr: "ff0e::1", want: kindMulticast, withPrivate: kindMulticast},
		// Unspecified: refused even with allowPrivate.
		{addr: "0.0.0.0", want: kindUnspecified, withPrivate: kindUnspecified},
		{addr: "::", want: kindUnspecified, withPrivate: kindUnspecified},
		{addr: "::ffff:0.0.0.0", want: kindUnspecified, withPrivate: kindUnspecified},
		// Broadcast and reserved.
		{addr: "255.255.255.255", want: kindBroadcast},
		{addr: "240.0.0.1", want: kindReserved},
		{addr: "255.255.255.254", want: kindReserved},
		{addr: "0.1.2.3", want: kindReserved},
		{addr: "192.88.99.1", want: kindReserved},
		{addr: "::7f00:1", want: kindReserved}, // IPv4-compatible ::127.0.0.1
		{addr: "100::1", want: kindReserved},
		{addr: "fec0::1", want: kindReserved},
		// Documentation.
		{addr: "192.0.2.1", want: kindDoc, allowListed: true},
		{addr: "192.0.2.2", want: kindDoc},
		{addr: "198.51.100.7", want: kindDoc},
		{addr: "203.0.113.200", want: kindDoc},
		{addr: "2001:db8::1", want: kindDoc},
		{addr: "3fff::1", want: kindDoc},
		// Benchmarking and IETF.
		{addr: "198.18.0.1", want: kindBench},
		{addr: "198.19.255.255", want: kindBench},
		{addr: "2001:2::1", want: kindBench},
		{addr: "192.0.0.8", want: kindIETF},
		// Teredo.
		{addr: "2001::1", want: kindTeredo},
		{addr: "2001:0:4136:e378:8000:63bf:3fff:fdd2", want: kindTeredo},
		// NAT64 and 6to4 embedding refused addresses.
		{addr: "64:ff9b::7f00:1", want: "a NAT64 address embedding 127.0.0.1 (" + kindLoopback + ")"},
		{addr: "64:ff9b::a9fe:a9fe", want: "a NAT64 address embedding 169.254.169.254 (" + kindLinkLocal + ")"},
		{addr: "64:ff9b::a00:1", want: "a NAT64 address embedding 10.0.0.1 (" + kindPrivate + ")", allowListed: true},
		{addr: "64:ff9b::e000:1", want: "a NAT64 address embedding 224.0.0.1 (" + kindMulticast + ")",
			withPrivate: "a NAT64 address embedding 224.0.0.1 (" + kindMulticast + ")", allowListed: true},
		{addr: "64:ff9b:1::1", want: kindPrivate}, // local-use NAT64
		{addr: "2002:7f00:1::", want: "a 6to4 address embedding 127.0.0.1 (" + kindLoopback + ")"},
		{addr: "2002:a00:5::1", want: "a 6to4 address embedding 10.0.0.5 (" + kindPrivate + ")"},
		{addr: "2002:c0a8:101::", want: "a 6to4 address embedding 192.168.1.1 (" + kindPrivate + ")"},
		{addr: "2002:0:0::1", want: "a 6to4 address embedding 0.0.0.0 (" + kindUnspecified + ")",
			withPrivate: "a 6to4 address embedding 0.0.0.0 (" + kindUnspecified + ")"},
	}
	check := func(t *testing.T, g *Guard, ip netip.Addr, want string) {
		t.Helper()
		err := g.Check(ip)
		if want == "" {
			if err != nil {
				t.Errorf("Check(%s) = %v, want allowed", ip, err)
			}
			return
		}
		if !errors.Is(err, ErrRefused) {
			t.Fatalf("Check(%s) = %v, want ErrRefused", ip, err)
		}
		var re *RefusedError
		if !errors.As(err, &re) || re.Kind != want || re.Addr != ip {
			t.Errorf("Check(%s) = %#v, want kind %q", ip, err, want)
		}
		if msg := fmt.Sprintf("refused: %s is %s", ip, want); err.Error() != msg {
			t.Errorf("Check(%s).Error() = %q, want %q", ip, err.Error(), msg)
		}
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tt.addr)
			t.Run("default", func(t *testing.T) { check(t, defaults, ip, tt.want) })
			t.Run("allowPrivate", func(t *testing.T) { check(t, private, ip, tt.withPrivate) })
			t.Run("allowList", func(t *testing.T) {
				want := tt.want
				if tt.allowListed {
					want = ""
				}
				check(t, allowList, ip, want)
			})
		})
	}
}

func TestGuardCheckInvalid(t *testing.T) {
	err := NewGuard(true, nil).Check(netip.Addr{})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("Check(invalid) = %v, want ErrRefused", err)
	}
}

func TestGuardControl(t *testing.T) {
	g := NewGuard(false, nil)
	tests := []struct {
		address string
		refused bool
	}{
		{"8.8.8.8:443", false},
		{"[2606:4700::1111]:443", false},
		{"127.0.0.1:80", true},
		{"[::1]:80", true},
		{"[fe80::1%eth0]:80", true},
		{"[::ffff:10.0.0.1]:80", true},
		{"not an address", true},
	}
	for _, tt := range tests {
		t.Run(tt.address, func(t *testing.T) {
			err := g.control(t.Context(), "tcp", tt.address, nil)
			if got := errors.Is(err, ErrRefused); got != tt.refused {
				t.Errorf("control(%q) = %v, want refused %v", tt.address, err, tt.refused)
			}
		})
	}
}

func ExampleGuard_Check() {
	g := NewGuard(false, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")})
	for _, a := range []string{"93.184.216.34", "10.0.0.5", "10.1.2.3", "169.254.169.254", "64:ff9b::7f00:1"} {
		fmt.Println(a, g.Check(netip.MustParseAddr(a)))
	}
	// Output:
	// 93.184.216.34 <nil>
	// 10.0.0.5 refused: 10.0.0.5 is a private address
	// 10.1.2.3 <nil>
	// 169.254.169.254 refused: 169.254.169.254 is a link-local address
	// 64:ff9b::7f00:1 refused: 64:ff9b::7f00:1 is a NAT64 address embedding 127.0.0.1 (a loopback address)
}

// CheckHost refuses the hosts of URLs no delivery could reach, literal
// addresses and localhost, and leaves names to the dial.
func TestGuardCheckHost(t *testing.T) {
	strict, open := NewGuard(false, nil), NewGuard(true, nil)
	cidr := NewGuard(false, []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	for _, tt := range []struct {
		name, host string
		g          *Guard
		refused    bool
		says       string
	}{
		{"loopback", "127.0.0.1", strict, true, "127.0.0.1 is a loopback address"},
		{"ipv6 loopback", "::1", strict, true, "loopback"},
		{"bracketed", "[::1]", strict, true, "loopback"},
		{"localhost", "localhost", strict, true, "localhost is 127.0.0.1, a loopback address"},
		{"LOCALHOST.", "LOCALHOST.", strict, true, "loopback"},
		{"under .localhost", "api.localhost", strict, true, "loopback"},
		{"private", "10.0.0.5", strict, true, "private"},
		{"metadata", "169.254.169.254", strict, true, "link-local"},
		{"public", "93.184.215.14", strict, false, ""},
		{"a name", "hooks.example.com", strict, false, ""},
		{"a name that looks local", "localhost.example.com", strict, false, ""},
		{"open: loopback", "127.0.0.1", open, false, ""},
		{"open: localhost", "localhost", open, false, ""},
		{"open: unspecified", "0.0.0.0", open, true, "unspecified"},
		{"cidr: inside", "10.1.2.3", cidr, false, ""},
		{"cidr: outside", "192.168.1.1", cidr, true, "private"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.g.CheckHost(tt.host)
			if (err != nil) != tt.refused || err != nil && !strings.Contains(err.Error(), tt.says) || err != nil && !errors.Is(err, ErrRefused) {
				t.Errorf("CheckHost(%q) = %v, want refused %v saying %q", tt.host, err, tt.refused, tt.says)
			}
		})
	}
}

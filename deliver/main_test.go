package deliver

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/hookjet/hookjet/internal/testkit"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// refSignAll is the reference webhook-signature header value for keys.
func refSignAll(keys [][]byte, id string, ts int64, body []byte) string {
	sigs := make([]string, len(keys))
	for i, k := range keys {
		sigs[i] = testkit.RefSign(k, id, strconv.FormatInt(ts, 10), body)
	}
	return strings.Join(sigs, " ")
}

// fakeDNS is a minimal UDP DNS server answering A and AAAA queries from a
// fixed table, and NXDOMAIN for every other name.
type fakeDNS struct {
	conn  net.PacketConn
	hosts map[string][]netip.Addr // fully qualified, lower case: "public.example."
	wg    sync.WaitGroup
}

// newFakeResolver starts a fakeDNS server and returns a resolver that asks
// only it. hosts maps names (without the trailing dot) to addresses.
func newFakeResolver(t *testing.T, hosts map[string][]netip.Addr) *net.Resolver {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &fakeDNS{conn: conn, hosts: make(map[string][]netip.Addr)}
	for name, addrs := range hosts {
		s.hosts[strings.ToLower(name)+"."] = addrs
	}
	s.wg.Go(s.serve)
	t.Cleanup(func() {
		if err := conn.Close(); err != nil {
			t.Error(err)
		}
		s.wg.Wait()
	})
	addr := conn.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp", addr)
		},
	}
}

func (s *fakeDNS) serve() {
	buf := make([]byte, 1500)
	for {
		n, from, err := s.conn.ReadFrom(buf)
		if err != nil {
			return // closed
		}
		if resp := s.answer(buf[:n]); resp != nil {
			_, _ = s.conn.WriteTo(resp, from)
		}
	}
}

// answer builds the response to one query, or nil for a malformed one.
func (s *fakeDNS) answer(q []byte) []byte {
	if len(q) < 12 {
		return nil
	}
	// Question: labels, then QTYPE and QCLASS.
	i := 12
	var name strings.Builder
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil
		}
		name.Write(q[i+1 : i+1+l])
		name.WriteByte('.')
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qEnd := i + 5
	qtype := binary.BigEndian.Uint16(q[i+1:])

	addrs, known := s.hosts[strings.ToLower(name.String())]
	var answers []netip.Addr
	for _, a := range addrs {
		if (qtype == 1 && a.Is4()) || (qtype == 28 && a.Is6()) {
			answers = append(answers, a)
		}
	}
	flags := uint16(0x8580) // QR, AA, RD, RA
	if !known {
		flags |= 3 // NXDOMAIN
	}
	resp := make([]byte, 0, 512)
	resp = append(resp, q[0], q[1])
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = binary.BigEndian.AppendUint16(resp, 1)
	resp = binary.BigEndian.AppendUint16(resp, uint16(len(answers)))
	resp = append(resp, 0, 0, 0, 0)
	resp = append(resp, q[12:qEnd]...)
	for _, a := range answers {
		resp = append(resp, 0xc0, 12) // pointer to the question's name
		resp = binary.BigEndian.AppendUint16(resp, qtype)
		resp = binary.BigEndian.AppendUint16(resp, 1)  // IN
		resp = binary.BigEndian.AppendUint32(resp, 60) // TTL
		b := a.AsSlice()
		resp = binary.BigEndian.AppendUint16(resp, uint16(len(b)))
		resp = append(resp, b...)
	}
	return resp
}

// TestFakeResolver checks the test's own DNS server, so that a guard test
// cannot pass because resolution failed.
func TestFakeResolver(t *testing.T) {
	r := newFakeResolver(t, map[string][]netip.Addr{
		"public.example": {netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("::1")},
	})
	got, err := r.LookupNetIP(t.Context(), "ip", "public.example")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("LookupNetIP = %v, want 127.0.0.1 and ::1", got)
	}
	_, err = r.LookupNetIP(t.Context(), "ip", "missing.example")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Fatalf("lookup of an unknown name: err = %v, want not found", err)
	}
}

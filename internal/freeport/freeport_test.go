package freeport

import (
	"fmt"
	"net"
	"testing"
)

func TestPortsAreDistinctListenableAndBelowTheEphemeralRange(t *testing.T) {
	ports, err := Ports(50)
	if err != nil {
		t.Fatal(err)
	}
	start := ephemeralStart()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d given twice", p)
		}
		seen[p] = true
		if start > lowest+1000 && (p < lowest || p >= start) {
			t.Errorf("port %d outside [%d, %d): an outgoing connection may be given it", p, lowest, start)
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			t.Fatalf("port %d: %v", p, err)
		}
		_ = ln.Close()
	}
}

// Package freeport picks loopback TCP ports for tests and tools that must
// name a port before the process that listens on it starts (an embedded
// NATS restarted on the same address, a nats-server cluster's routes,
// PostgreSQL).
//
// A port the kernel hands out for 127.0.0.1:0 is one of its ephemeral
// ports, and between the check and the listener's bind any outgoing
// connection on the machine may be given it ("address already in use").
// Port chooses below the ephemeral range instead (Linux's
// ip_local_port_range), where only another explicit bind can take it:
// each process starts at a random point of that range and walks on from
// there, so processes asking at once rarely meet.
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
)

// lowest is the bottom of the range Port chooses from, above the ports
// services usually claim.
const lowest = 10000

var (
	mu     sync.Mutex
	hi     int // the ephemeral range's first port; 0: unknown, use the kernel's choice
	next   int
	inited bool
)

// Port returns a loopback TCP port no one listened on when asked, distinct
// from the others this process was given (until the range wraps).
func Port() (int, error) {
	mu.Lock()
	defer mu.Unlock()
	if !inited {
		inited = true
		hi = ephemeralStart()
		if hi > lowest+1000 {
			next = lowest + rand.IntN(hi-lowest)
		} else {
			hi = 0
		}
	}
	for range 1000 {
		if hi == 0 {
			break
		}
		p := next
		if next++; next >= hi {
			next = lowest
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			continue
		}
		_ = ln.Close()
		return p, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = ln.Close() }()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Ports returns n distinct ports.
func Ports(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range ports {
		p, err := Port()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	return ports, nil
}

// Addr returns "127.0.0.1:<port>" for a Port.
func Addr() (string, error) {
	p, err := Port()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", p), nil
}

// ephemeralStart is the first port of the kernel's ephemeral range, or 0
// where it cannot be read.
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	var lo int
	if _, err := fmt.Sscan(strings.TrimSpace(string(b)), &lo); err != nil {
		return 0
	}
	return lo
}

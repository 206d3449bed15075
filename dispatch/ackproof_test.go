package dispatch

import (
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// stallProxy forwards one TCP connection to a server and, while stalled,
// passes nothing either way and keeps the connection open: a silent
// partition.
type stallProxy struct {
	ln      net.Listener
	mu      sync.Mutex
	stalled bool
	resume  *sync.Cond
	conns   []net.Conn
	wg      sync.WaitGroup
}

func newStallProxy(t *testing.T, target string) *stallProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &stallProxy{ln: ln}
	p.resume = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, s)
			p.mu.Unlock()
			p.wg.Add(2)
			go p.pipe(s, c)
			go p.pipe(c, s)
		}
	}()
	t.Cleanup(func() {
		p.stall(false)
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *stallProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		for p.stalled {
			p.resume.Wait()
		}
		p.mu.Unlock()
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				_ = dst.Close()
			}
			return
		}
	}
}

func (p *stallProxy) stall(on bool) {
	p.mu.Lock()
	p.stalled = on
	p.mu.Unlock()
	p.resume.Broadcast()
}

// The proof that the server read every ack written: given at once when
// none is unconfirmed, after one PING when some are, and refused while the
// connection passes nothing (a silent partition: the client still thinks
// it is connected), within about ackProbeWait; given again once it passes.
func TestAckProofSeesASilentPartition(t *testing.T) {
	r := newRig(t, nil, nil)
	px := newStallProxy(t, r.node.ClientURL()[len("nats://"):])
	nc, err := nats.Connect("nats://"+px.ln.Addr().String(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	p := &ackProof{nc: nc}
	if !p.confirmed() {
		t.Fatal("no ack written, yet not confirmed")
	}
	if err := nc.Publish("acks.written", nil); err != nil {
		t.Fatal(err)
	}
	p.wrote()
	if !p.confirmed() || p.proven != 1 {
		t.Fatalf("an ack on a working connection not confirmed (proven %d)", p.proven)
	}
	px.stall(true)
	if err := nc.Publish("acks.written", nil); err != nil {
		t.Fatal(err)
	}
	p.wrote()
	start := time.Now()
	var wg sync.WaitGroup
	results := make([]bool, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = p.confirmed()
		}()
	}
	wg.Wait()
	for i, ok := range results {
		if ok {
			t.Fatalf("caller %d: an ack written into a stalled connection confirmed", i)
		}
	}
	if took := time.Since(start); took > 3*ackProbeWait {
		t.Fatalf("refusing the proof took %s", took)
	}
	if !nc.IsConnected() {
		t.Fatal("the client noticed the stall: the test does not model a silent partition")
	}
	px.stall(false)
	eventually(t, "the proof once the connection passes again", 10*time.Second, p.confirmed)
	if p.proven != 2 {
		t.Fatalf("proven %d, want 2", p.proven)
	}
}

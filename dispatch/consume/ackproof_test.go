package consume

import (
	"errors"
	"io"
	"log/slog"
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

// The proof that the server took every ack written, from its answers: given
// at once when none is unanswered and once the server has answered; refused
// at the deadline while the connection passes nothing (a silent partition:
// the client still thinks it is connected), and given once it passes again;
// an ack unanswered is written again, and given up after giveUp, which
// refuses the attempts waiting for it and no later one.
func TestAckProofSeesASilentPartition(t *testing.T) {
	node := startNode(t)
	px := newStallProxy(t, node.ClientURL()[len("nats://"):])
	nc, err := nats.Connect("nats://"+px.ln.Addr().String(), nats.MaxReconnects(-1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AddStream(&nats.StreamConfig{Name: "PROOF", Subjects: []string{"proof.>"}}); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := js.Publish("proof.e", nil); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := js.PullSubscribe("proof.>", "c", nats.AckWait(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := sub.Fetch(3, nats.MaxWait(5*time.Second))
	if err != nil || len(msgs) != 3 {
		t.Fatalf("fetch: %d messages, %v", len(msgs), err)
	}
	p, err := NewAckProof(nc, 2*time.Second, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	soon := func(d time.Duration) time.Time { return time.Now().Add(d) }

	if !p.Confirmed(soon(time.Second)) {
		t.Fatal("no ack written, yet not confirmed")
	}
	if err := p.Ack(msgs[0].Reply); err != nil {
		t.Fatal(err)
	}
	if !p.Confirmed(soon(5 * time.Second)) {
		t.Fatal("an ack on a working connection not confirmed")
	}
	if ci, err := sub.ConsumerInfo(); err != nil || ci.AckFloor.Stream != 1 {
		t.Fatalf("confirmed, yet the consumer's ack floor is %+v (%v)", ci.AckFloor, err)
	}

	px.stall(true)
	if err := p.Ack(msgs[1].Reply); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var wg sync.WaitGroup
	results := make([]bool, 4)
	for i := range results {
		wg.Go(func() { results[i] = p.Confirmed(start.Add(time.Second)) })
	}
	wg.Wait()
	for i, ok := range results {
		if ok {
			t.Fatalf("caller %d: an ack written into a stalled connection confirmed", i)
		}
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Fatalf("refusing the proof took %s, deadline 1s", took)
	}
	if !nc.IsConnected() {
		t.Fatal("the client noticed the stall: the test does not model a silent partition")
	}
	px.stall(false)
	if !p.Confirmed(soon(5 * time.Second)) {
		t.Fatal("not confirmed once the connection passes again")
	}

	// An ack that nobody takes at first (a consumer leader not elected
	// yet) is written again until it is answered.
	if err := p.Ack("unacked.nobody.yet"); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(800*time.Millisecond, func() {
		_, _ = node.Conn().Subscribe("unacked.nobody.yet", func(m *nats.Msg) { _ = m.Respond(nil) })
	})
	if !p.Confirmed(soon(1900 * time.Millisecond)) {
		t.Fatal("an ack answered only when written again: not confirmed")
	}

	// One nobody ever answers is given up after giveUp: the attempts
	// waiting for it are refused, the next one goes.
	if err := p.Ack("unacked.never"); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	if p.Confirmed(soon(10 * time.Second)) {
		t.Fatal("an ack never answered: confirmed")
	}
	if took := time.Since(start); took < 1500*time.Millisecond || took > 5*time.Second {
		t.Fatalf("given up after %s, want about 2s", took)
	}
	if p.lost != 1 {
		t.Fatalf("%d acks given up, want 1", p.lost)
	}
	if !p.Confirmed(soon(time.Second)) {
		t.Fatal("after the give-up, the next attempt waits still")
	}
	if err := p.Ack(msgs[2].Reply); err != nil || !p.Confirmed(soon(5*time.Second)) {
		t.Fatalf("an ack after a give-up: not confirmed (%v)", err)
	}
}

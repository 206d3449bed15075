package dispatch

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// An ack is a message like any other: written to a connection that a
// silent partition has cut, it is lost without an error, and JetStream
// hands the event to another process after AckWait, which delivers it
// again. So with nats.url a fan-out attempt starts only once the server has
// answered a PING sent after every ack this process had written (the
// protocol is ordered: it has read them). An endpoint's in-flight slot then
// carries at most one delivery whose ack may be lost, and a partition
// repeats at most max_in_flight deliveries per endpoint. Not covered: an
// event with several endpoints is acked when its last delivery is settled,
// so the deliveries settled before it wait unconfirmed meanwhile.
type ackProof struct {
	nc *nats.Conn

	mu      sync.Mutex
	written uint64        // fan-out acks written
	proven  uint64        // of them, read by the server
	probe   chan struct{} // closed when the running probe ends; nil when none runs
}

// ackProbeWait bounds how long an attempt waits for the proof: a PING
// unanswered that long means the connection is cut or far too slow for
// the ack to be useful.
const ackProbeWait = time.Second

// wrote notes an ack written to the connection.
func (p *ackProof) wrote() {
	p.mu.Lock()
	p.written++
	p.mu.Unlock()
}

// confirmed reports whether the server has read every ack written so far,
// probing with one PING for every caller waiting at the time; false after
// about ackProbeWait without an answer.
func (p *ackProof) confirmed() bool {
	deadline := time.Now().Add(ackProbeWait)
	for {
		p.mu.Lock()
		want := p.written
		if p.proven >= want {
			p.mu.Unlock()
			return true
		}
		if time.Now().After(deadline) {
			p.mu.Unlock()
			return false
		}
		if ch := p.probe; ch != nil {
			p.mu.Unlock()
			<-ch // the running probe ends within ackProbeWait
			continue
		}
		ch := make(chan struct{})
		p.probe = ch
		p.mu.Unlock()
		err := p.nc.FlushTimeout(time.Until(deadline))
		p.mu.Lock()
		if err == nil {
			p.proven = max(p.proven, want)
		}
		p.probe = nil
		p.mu.Unlock()
		close(ch)
		if err != nil {
			return false
		}
	}
}

package consume

import (
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// An ack is a message like any other. Written to a connection that a
// silent partition has cut, it is lost without an error; read by a cluster
// node that fails before the fan-out consumer's other replicas have it, it
// is lost after the server took it. Either way JetStream hands the event
// out again after AckWait, and a process other than the one that delivered
// it delivers it again (the ledger that would refuse it is local).
//
// So with nats.url the fan-out acks with a reply subject, and the server
// answers once the ack is in the consumer's state: on a cluster, once the
// consumer's replicas have applied it (nats-server sends an AckSync reply
// from processReplicatedAck). A fan-out attempt starts only once every ack
// written before it is answered; an endpoint's in-flight slot then carries
// at most one delivery whose ack may be lost, and a partition or a failed
// node repeats at most max_in_flight deliveries per endpoint. An ack
// unanswered for ackResend is written again, so that a consumer leader
// elected meanwhile takes it before its AckWait runs out; one still
// unanswered after giveUp (half the fan-out's AckWait: the attempts behind
// it are late by then anyway) is given up, and the attempts waiting for
// it are not made. Not covered: an event with several endpoints is acked
// when its last delivery is settled, so the deliveries settled before it
// wait unconfirmed meanwhile.
type AckProof struct {
	nc     *nats.Conn
	log    *slog.Logger
	inbox  string        // an answer comes to inbox.<ack id>
	giveUp time.Duration // set before use
	sub    *nats.Subscription

	mu        sync.Mutex
	next      uint64              // id of the next ack written
	floor     uint64              // every ack below it is answered or given up
	pending   map[uint64]*sentAck // written, not answered
	answered  chan struct{}       // closed and replaced when the floor moves
	lost      uint64              // acks given up so far
	lastSweep time.Time
}

// sentAck is an ack written and not answered.
type sentAck struct {
	subject  string
	at, sent time.Time // first written, last written
}

const (
	// ackResend is how long an ack waits for its answer before it is
	// written again.
	ackResend = 500 * time.Millisecond
	// ackSweepEvery is how often a waiting attempt looks for acks to
	// write again or give up (one waiter at a time).
	ackSweepEvery = 100 * time.Millisecond
)

var ackBody = []byte("+ACK")

// NewAckProof subscribes to the answers on nc. Close unsubscribes.
func NewAckProof(nc *nats.Conn, giveUp time.Duration, log *slog.Logger) (*AckProof, error) {
	p := &AckProof{
		nc: nc, log: log, inbox: nc.NewRespInbox(), giveUp: giveUp,
		pending: make(map[uint64]*sentAck), answered: make(chan struct{}),
	}
	sub, err := nc.Subscribe(p.inbox+".*", func(m *nats.Msg) {
		if m.Header.Get("Status") == "503" {
			// No responders: nobody took the ack (a consumer with no
			// leader), which is no answer.
			return
		}
		id, err := strconv.ParseUint(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:], 10, 64)
		if err == nil {
			p.answer(id)
		}
	})
	if err != nil {
		return nil, err
	}
	p.sub = sub
	return p, nil
}

// Close stops taking answers.
func (p *AckProof) Close() {
	if err := p.sub.Unsubscribe(); err != nil {
		p.log.Debug("ack answers: unsubscribe", "err", err)
	}
}

// ack acks the JetStream message whose reply subject is subject, asking
// for an answer.
func (p *AckProof) Ack(subject string) error {
	now := time.Now()
	p.mu.Lock()
	id := p.next
	p.next++
	p.pending[id] = &sentAck{subject: subject, at: now, sent: now}
	p.mu.Unlock()
	err := p.publish(id, subject)
	if err != nil {
		p.answer(id) // not written: nothing to wait for
	}
	return err
}

// publish writes ack id to subject, its answer asked for at inbox.<id>.
func (p *AckProof) publish(id uint64, subject string) error {
	reply := p.inbox + "." + strconv.FormatUint(id, 10)
	return p.nc.PublishMsg(&nats.Msg{Subject: subject, Reply: reply, Data: ackBody})
}

// answer notes that ack id was answered.
func (p *AckProof) answer(id uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[id]; !ok {
		return // answered twice (written again), or given up
	}
	delete(p.pending, id)
	p.advance()
}

// advance moves the floor past the acks no longer pending. The caller
// holds p.mu.
func (p *AckProof) advance() {
	moved := false
	for p.floor < p.next {
		if _, ok := p.pending[p.floor]; ok {
			break
		}
		p.floor++
		moved = true
	}
	if moved {
		close(p.answered)
		p.answered = make(chan struct{})
	}
}

// Confirmed reports whether every ack written so far has been answered,
// waiting until it has; false when one of them is given up meanwhile (or
// any other: a refusal too many costs a hand-back, not a duplicate) or at
// deadline.
func (p *AckProof) Confirmed(deadline time.Time) bool {
	p.mu.Lock()
	want, lost := p.next, p.lost
	for {
		again := p.sweep(time.Now())
		givenUp, done, ch := p.lost > lost, p.floor >= want, p.answered
		p.mu.Unlock()
		p.write(again)
		switch {
		case givenUp:
			return false
		case done:
			return true
		}
		wait := min(time.Until(deadline), ackSweepEvery)
		if wait <= 0 {
			return false
		}
		t := time.NewTimer(wait)
		select {
		case <-ch:
		case <-t.C:
		}
		t.Stop()
		p.mu.Lock()
	}
}

// resend is an ack to write again.
type resend struct {
	id      uint64
	subject string
}

// sweep gives up the acks pending for longer than giveUp and returns those
// to write again, at most once per ackSweepEvery. The caller holds p.mu.
// Acks are written in id order, so the oldest are the lowest ids.
func (p *AckProof) sweep(now time.Time) []resend {
	if p.floor >= p.next || now.Sub(p.lastSweep) < ackSweepEvery {
		return nil
	}
	p.lastSweep = now
	var (
		again []resend
		given uint64
	)
	for id := p.floor; id < p.next; id++ {
		a, ok := p.pending[id]
		if !ok {
			continue
		}
		age := now.Sub(a.at)
		if age < ackResend {
			break // and so are the ones after it
		}
		if age >= p.giveUp {
			delete(p.pending, id)
			given++
			continue
		}
		if now.Sub(a.sent) >= ackResend {
			a.sent = now
			again = append(again, resend{id: id, subject: a.subject})
		}
	}
	if given > 0 {
		p.lost += given
		p.advance()
		p.log.Warn("fan-out acks unanswered, given up: their events may be delivered again",
			"acks", given, "after", p.giveUp, "given_up_total", p.lost)
	}
	return again
}

// write writes the acks of sweep again.
func (p *AckProof) write(again []resend) {
	for _, a := range again {
		if err := p.publish(a.id, a.subject); err != nil {
			p.log.Debug("write an unanswered ack again", "err", err)
			return
		}
	}
}

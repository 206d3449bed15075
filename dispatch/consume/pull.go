package consume

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// puller pulls the fan-out consumer. Each pull request replies to
// an inbox subject of its own, subscribed until the server ends the pull:
// with its status (408 when its wait is up, 409, 404), which the server
// sends after the pull's events, or by filling its batch. So an event the
// server sends a pull late (seconds after it took it, see fanoutAhead) is
// still received: nats.go's Fetch stops listening a second after the
// pull's wait is up, and such events were lost until AckWait (30 s and
// more) ran out. What a pull did not fill is given back to the room held
// ahead. Every pull's subscription feeds one channel, as large as what the
// pulls may bring, so none drops an event.
type puller struct {
	nc    *nats.Conn
	api   string // the consumer's next-message subject
	inbox string
	msgs  chan *nats.Msg
	ahead *aheadQueue

	mu   sync.Mutex
	next uint64
	open map[string]*openPull
}

// openPull is a pull request the server has not ended yet.
type openPull struct {
	sub             *nats.Subscription
	n, got          int
	limit, gotBytes int64 // bytes reserved in ahead.bytes, bytes received
	sent            time.Time
}

// fanoutUnanswered is how long past its wait a pull may go without an
// answer before it is given up (its room given back): the server lost it
// (a reconnect) or the consumer is gone.
const fanoutUnanswered = 10 * time.Second

// errPullUnanswered reports a pull given up without an answer.
var errPullUnanswered = errors.New("a fan-out pull went unanswered")

func newPuller(nc *nats.Conn, stream, consumer string, ahead *aheadQueue) *puller {
	return &puller{
		nc:    nc,
		api:   "$JS.API.CONSUMER.MSG.NEXT." + stream + "." + consumer,
		inbox: nc.NewInbox(),
		// The events of the open pulls (at most fanoutAhead, and those
		// of pulls given up) and a status each.
		msgs:  make(chan *nats.Msg, 4*fanoutAhead),
		ahead: ahead,
		open:  map[string]*openPull{},
	}
}

// request asks for n events within limit bytes (reserved by the caller),
// waiting at the server for fanoutWait.
func (p *puller) request(n int, limit int64) error {
	p.mu.Lock()
	p.next++
	id := strconv.FormatUint(p.next, 10)
	p.mu.Unlock()
	sub, err := p.nc.ChanSubscribe(p.inbox+"."+id, p.msgs)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.open[id] = &openPull{sub: sub, n: n, limit: limit, sent: time.Now()}
	p.mu.Unlock()
	req := `{"batch":` + strconv.Itoa(n) + `,"max_bytes":` + strconv.FormatInt(limit, 10) + `,"expires":` + strconv.FormatInt(fanoutWait.Nanoseconds(), 10) + `}`
	if err := p.nc.PublishRequest(p.api, p.inbox+"."+id, []byte(req)); err != nil {
		p.end(id, false)
		return err
	}
	return nil
}

// end closes pull id, giving back what it did not fill; empty reports
// whether it ended without an event.
func (p *puller) end(id string, ok bool) (empty bool) {
	p.mu.Lock()
	op := p.open[id]
	delete(p.open, id)
	p.mu.Unlock()
	if op == nil {
		return false
	}
	if ok {
		// The server ended it. Listen a while longer: an R3 consumer
		// holds each delivery until its replicas have it, but sends a
		// pull's "409 Batch Completed" (a pull with a byte limit) at once,
		// so its last events can come after it (nats-server 2.15.2,
		// consumer.go). They are taken as events of a pull already ended
		// instead of waiting out AckWait at the server.
		sub := op.sub
		time.AfterFunc(pullLinger, func() { _ = sub.Unsubscribe() })
	} else {
		// Given up here (stopping, unanswered): unsubscribe now, so the
		// server finds no one and puts what it still sends back at once.
		_ = op.sub.Unsubscribe()
	}
	p.ahead.give(op.n - op.got)
	p.ahead.bytes.Release(op.limit - op.gotBytes)
	return ok && op.got == 0
}

// pullLinger is how long an ended pull's subscription still takes events.
const pullLinger = 5 * time.Second

// received counts an event of pull id, and ends the pull when its batch is
// full. An event of a pull already given up takes room beyond the limit.
//
// It returns when the pull that brought the event was sent (now for an
// event of a pull no longer open): the server handed the event over after
// that, so its AckWait runs out no earlier than that plus AckWait, however
// long the event then waited in the socket (a process paused with a pull
// open reads it late).
func (p *puller) received(id string, size int64) time.Time {
	p.mu.Lock()
	op := p.open[id]
	if op == nil {
		p.mu.Unlock()
		p.ahead.force(size)
		return time.Now()
	}
	sent := op.sent
	op.got++
	op.gotBytes += size
	full := op.got >= op.n
	if full {
		delete(p.open, id)
	}
	p.mu.Unlock()
	if full {
		_ = op.sub.Unsubscribe()
		p.ahead.bytes.Release(op.limit - op.gotBytes)
	}
	return sent
}

// openCount is how many pulls are open.
func (p *puller) openCount() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.open)
}

// sweep gives up the pulls unanswered fanoutUnanswered past their wait,
// and reports whether it gave one up.
func (p *puller) sweep(now time.Time) bool {
	var lost []string
	p.mu.Lock()
	for id, op := range p.open {
		if now.Sub(op.sent) > fanoutWait+fanoutUnanswered {
			lost = append(lost, id)
		}
	}
	p.mu.Unlock()
	for _, id := range lost {
		p.end(id, false)
	}
	return len(lost) > 0
}

// endAll gives up every open pull.
func (p *puller) endAll() {
	p.mu.Lock()
	ids := make([]string, 0, len(p.open))
	for id := range p.open {
		ids = append(ids, id)
	}
	p.mu.Unlock()
	for _, id := range ids {
		p.end(id, false)
	}
}

// receive queues the events of the pulls in ahead until listen ends, or
// the consumer is deleted (its error). Events that arrive once ctx is done
// go straight back to JetStream. Other failures (no JetStream, a pull
// unanswered) are reported to failed, without waiting, and receiving goes
// on.
func (p *puller) receive(ctx, listen context.Context, failed chan<- error, log func(string, ...any)) error {
	defer p.endAll()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		var m *nats.Msg
		select {
		case m = <-p.msgs:
		case now := <-t.C:
			if p.sweep(now) {
				report(failed, errPullUnanswered)
			}
			continue
		case <-listen.Done():
			return nil
		}
		id := ""
		if m.Sub != nil {
			id = strings.TrimPrefix(m.Sub.Subject, p.inbox+".")
		}
		if status := m.Header.Get("Status"); status != "" && len(m.Data) == 0 {
			if err := p.status(id, status, m.Header.Get("Description")); err != nil {
				if errors.Is(err, natsjs.ErrConsumerDeleted) {
					return err
				}
				report(failed, err)
			}
			continue
		}
		sent := p.received(id, int64(len(m.Data)))
		if ctx.Err() != nil {
			if err := m.Nak(); err != nil {
				log("nak pulled event", "err", err)
			}
			p.ahead.took(Pulled{Msg: coreMsg{m}})
			continue
		}
		p.ahead.queue <- Pulled{Msg: coreMsg{m}, At: time.Now(), Sent: sent} // never blocks: see aheadQueue
	}
}

// handBack hands the events left in the channel back to JetStream, once
// receive has returned.
func (p *puller) handBack(log func(string, ...any)) {
	for {
		select {
		case m := <-p.msgs:
			if m.Header.Get("Status") != "" && len(m.Data) == 0 {
				continue
			}
			if err := m.Nak(); err != nil {
				log("hand back pulled event", "err", err)
			}
		default:
			return
		}
	}
}

// status ends pull id on the server's status for it and returns the error
// it stands for, if any.
func (p *puller) status(id, status, desc string) error {
	switch status {
	case "100": // a heartbeat or flow control: none are asked for
		return nil
	case "503":
		p.end(id, false)
		return nats.ErrNoResponders
	case "409":
		if strings.Contains(strings.ToLower(desc), "consumer deleted") {
			p.end(id, false)
			return natsjs.ErrConsumerDeleted
		}
		if p.end(id, true) && strings.Contains(strings.ToLower(desc), "exceeds maxbytes") {
			// The next event is over the pull's byte limit (a
			// process with a larger security.max_payload_bytes
			// stored it): ask with the largest limit from now on.
			p.ahead.pullBytes.Store(fanoutBytes)
		}
		return nil
	case "408", "404": // its wait is up; nothing to send
		p.end(id, true)
		return nil
	}
	// Refused (400, a malformed request): reported, so that pulls are
	// not sent again at once.
	p.end(id, false)
	return fmt.Errorf("fan-out pull refused: %s %s", status, desc)
}

// report sends err to failed unless an error already waits there.
func report(failed chan<- error, err error) {
	select {
	case failed <- err:
	default:
	}
}

// coreMsg is a JetStream message received on a core NATS subscription,
// as the fan-out's jetstream.Msg.
type coreMsg struct{ m *nats.Msg }

func (c coreMsg) Metadata() (*natsjs.MsgMetadata, error) {
	md, err := c.m.Metadata()
	if err != nil {
		return nil, err
	}
	return &natsjs.MsgMetadata{
		Sequence:     natsjs.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered,
		NumPending:   md.NumPending,
		Timestamp:    md.Timestamp,
		Stream:       md.Stream,
		Consumer:     md.Consumer,
		Domain:       md.Domain,
	}, nil
}

func (c coreMsg) Data() []byte                           { return c.m.Data }
func (c coreMsg) Headers() nats.Header                   { return c.m.Header }
func (c coreMsg) Subject() string                        { return c.m.Subject }
func (c coreMsg) Reply() string                          { return c.m.Reply }
func (c coreMsg) Ack() error                             { return c.m.Ack() }
func (c coreMsg) DoubleAck(ctx context.Context) error    { return c.m.AckSync(nats.Context(ctx)) }
func (c coreMsg) Nak() error                             { return c.m.Nak() }
func (c coreMsg) NakWithDelay(delay time.Duration) error { return c.m.NakWithDelay(delay) }
func (c coreMsg) InProgress() error                      { return c.m.InProgress() }
func (c coreMsg) Term() error                            { return c.m.Term() }
func (c coreMsg) TermWithReason(reason string) error     { return c.m.Respond([]byte("+TERM " + reason)) }

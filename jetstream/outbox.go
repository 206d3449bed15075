package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/outbox"
)

// outboxPubTimeout bounds the wait for one PubAck of the outbox relay.
const outboxPubTimeout = 10 * time.Second

// OutboxPublisher is the [outbox.Publisher] hookjet uses: it publishes a
// batch of outbox rows to hookjet.events.<event_type> with the row's tenant
// in Hookjet-Tenant (or, for rejected rows, to hookjet.dlq._outbox with
// reason "rejected") and waits for every
// PubAck. Events go in atomic batches (Nats-Batch-Id) when HOOKJET_EVENTS
// allows them, so that a server that syncs always fsyncs once per batch; a
// batch the server refuses (a row already stored, after a crash) and dead
// letters are published one by one, asynchronously.
type OutboxPublisher struct {
	nc         *nats.Conn
	js         natsjs.JetStream
	maxMsgSize int
	atomic     atomicState // outbox_atomic.go
}

// NewOutboxPublisher returns a publisher on nc that allows up to maxPending
// publishes in flight (at least outbox.batch) and messages up to maxMsgSize
// bytes (the streams' MaxMsgSize; 0: the server's max_payload only).
func NewOutboxPublisher(nc *nats.Conn, maxPending, maxMsgSize int) (*OutboxPublisher, error) {
	js, err := natsjs.New(nc,
		natsjs.WithPublishAsyncMaxPending(max(maxPending, 1)),
		natsjs.WithPublishAsyncTimeout(outboxPubTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &OutboxPublisher{nc: nc, js: js, maxMsgSize: maxMsgSize}, nil
}

// Publish implements [outbox.Publisher]. A message larger than the server's
// max_payload or the streams' MaxMsgSize fails with an error wrapping
// [outbox.ErrRefused]; a dead letter whose body would be too large is stored
// without it.
func (p *OutboxPublisher) Publish(ctx context.Context, batch []outbox.Message) []outbox.Ack {
	acks := make([]outbox.Ack, len(batch))
	limit := int(p.nc.MaxPayload())
	if p.maxMsgSize > 0 && (limit <= 0 || p.maxMsgSize < limit) {
		limit = p.maxMsgSize
	}
	msgs := make([]*nats.Msg, len(batch))
	for i := range batch {
		m := p.natsMsg(batch[i], limit)
		if size := msgSize(m); limit > 0 && size > limit {
			acks[i].Err = fmt.Errorf("%w: %d bytes with headers exceed what the stream takes (%d)", outbox.ErrRefused, size, limit)
			continue
		}
		msgs[i] = m
	}
	// Events go in atomic batches when the stream allows them: one fsync
	// per batch instead of one per row on a server that syncs always.
	if len(batch) > 1 && p.atomic.allowed(ctx, p.js) {
		p.publishAtomic(ctx, batch, msgs, acks)
	}
	publishEach(ctx, p.js, msgs, func(i int, ack *natsjs.PubAck, err error) {
		if err != nil {
			acks[i].Err = fmt.Errorf("publish %s: %w", msgs[i].Subject, err)
			return
		}
		acks[i].Duplicate = ack.Duplicate
	})
	return acks
}

// natsMsg builds the NATS message of one outbox row.
func (p *OutboxPublisher) natsMsg(m outbox.Message, limit int) *nats.Msg {
	if m.Reject == "" {
		out := nats.NewMsg(EventsPrefix + m.EventType)
		for k, v := range m.Header {
			out.Header[k] = v
		}
		out.Header.Set(HdrMsgID, m.ID)
		if m.Tenant != "" {
			out.Header.Set(HdrTenant, m.Tenant)
		}
		if m.Key != "" {
			out.Header.Set(HdrOrderingKey, m.Key)
		}
		out.Data = m.Payload
		return out
	}
	id := headerSafe(m.ID)
	out := nats.NewMsg(DLQPrefix + config.OutboxDLQEndpoint)
	h := out.Header
	h.Set(HdrMsgID, "dlq-"+config.OutboxDLQEndpoint+"-"+id)
	h.Set(HdrEventID, id)
	h.Set(HdrEventType, headerSafe(m.EventType))
	h.Set(HdrEndpoint, config.OutboxDLQEndpoint)
	h.Set(HdrReason, "rejected")
	h.Set(HdrAttempts, "0")
	h.Set(HdrLastStatus, "")
	h.Set(HdrLastError, headerSafe(m.Reject))
	h.Set(HdrFirstTry, "")
	h.Set(HdrLastTry, "")
	if m.Tenant != "" { // a valid tenant only: an invalid one is why the row was rejected
		h.Set(HdrTenant, m.Tenant)
	}
	if m.Key != "" { // a valid key only, as the tenant
		h.Set(HdrOrderingKey, m.Key)
	}
	if ct := m.Header[HdrContentType]; len(ct) > 0 {
		h.Set(HdrContentType, headerSafe(ct[0]))
	}
	out.Data = m.Payload
	if limit > 0 && msgSize(out) > limit {
		out.Data = nil
		h.Set(HdrLastError, headerSafe(m.Reject)+fmt.Sprintf("; body of %d bytes not kept (too large to store)", len(m.Payload)))
	}
	return out
}

// msgSize is about what m costs against the server's max_payload.
func msgSize(m *nats.Msg) int {
	n := len(m.Data) + 12 // "NATS/1.0\r\n" and the final "\r\n"
	for k, vs := range m.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// headerSafe replaces control characters, which a NATS header cannot carry.
func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// WaitOutboxStreams waits until the streams an outbox relay publishes to
// exist (created by `hookjet serve`), so that a relay started first does not
// publish into nothing.
func WaitOutboxStreams(ctx context.Context, nc *nats.Conn) error {
	js, err := natsjs.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	for _, name := range []string{EventsStream, DLQStream} {
		if _, err := js.Stream(ctx, name); err != nil {
			if errors.Is(err, natsjs.ErrStreamNotFound) {
				return fmt.Errorf("stream %s not found: start `hookjet serve` on this NATS first: %w", name, err)
			}
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	return nil
}

package inboundconsumer

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/webhook"
	"github.com/hookjet/hookjet/webhook/kvdedupe"
)

// Headers the gateway sets on every stored event.
const (
	stream      = "HOOKJET_INBOUND"
	hdrSource   = "Hookjet-Inbound-Source"
	hdrID       = "Hookjet-Inbound-Id"
	hdrReceived = "Hookjet-Received-At"
)

// Event is one stored webhook.
type Event struct {
	Source     string // the gateway's source id
	ID         string // the provider's event id
	Subject    string // hookjet.inbound.<source>.<type>
	ReceivedAt time.Time
	Body       []byte // exactly as the provider sent it
}

// Options configure a Consumer.
type Options struct {
	// Durable names the consumer; every replica uses the same name.
	Durable string
	// Filter selects subjects, e.g. hookjet.inbound.stripe.>; empty: all.
	Filter string
	// Bucket is the KV dedupe bucket, created when missing; empty means
	// <Durable>_processed.
	Bucket string
	// TTL is how long processed ids are remembered; default 24h.
	TTL time.Duration
	// Handle does the effect. An error leaves the event for a retry in
	// RetryDelay; it is never acked unprocessed.
	Handle func(ctx context.Context, ev Event) error
	// RetryDelay is how long a failed or contended event waits; default 1s.
	RetryDelay time.Duration
	// Store replaces the KV store (e.g. a webhook/pgdedupe store, or one
	// wrapped by webhook.Counted).
	Store webhook.Store
	// OnError hears what could not be processed or acknowledged (the event
	// comes back either way); nil ignores it.
	OnError func(ev Event, err error)
}

// Consumer reads HOOKJET_INBOUND until Stop.
type Consumer struct {
	cc natsjs.ConsumeContext
}

// Start creates (or updates) the durable consumer and the dedupe bucket and
// starts consuming.
func Start(ctx context.Context, js natsjs.JetStream, o Options) (*Consumer, error) {
	if o.Durable == "" || o.Handle == nil {
		return nil, errors.New("inboundconsumer: Durable and Handle are required")
	}
	if o.TTL <= 0 {
		o.TTL = 24 * time.Hour
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = time.Second
	}
	if o.Store == nil {
		bucket := o.Bucket
		if bucket == "" {
			bucket = o.Durable + "_processed"
		}
		kv, err := js.CreateOrUpdateKeyValue(ctx, kvdedupe.BucketConfig(bucket, o.TTL))
		if err != nil {
			return nil, fmt.Errorf("inboundconsumer: bucket %s: %w", bucket, err)
		}
		o.Store = kvdedupe.New(kv)
	}
	c, err := js.CreateOrUpdateConsumer(ctx, stream, natsjs.ConsumerConfig{
		Durable:       o.Durable,
		FilterSubject: o.Filter,
		AckPolicy:     natsjs.AckExplicitPolicy,
		AckWait:       time.Minute,
		MaxAckPending: 256,
	})
	if err != nil {
		return nil, fmt.Errorf("inboundconsumer: consumer %s: %w", o.Durable, err)
	}
	cc, err := c.Consume(func(m natsjs.Msg) { handle(m, o) }, natsjs.PullMaxMessages(64))
	if err != nil {
		return nil, err
	}
	return &Consumer{cc: cc}, nil
}

// handle processes one message at most once: ack after the effect (or for
// a duplicate), NakWithDelay when it failed so that it is retried.
func handle(m natsjs.Msg, o Options) {
	h := m.Headers()
	ev := Event{Source: h.Get(hdrSource), ID: h.Get(hdrID), Subject: m.Subject(), Body: m.Data()}
	ev.ReceivedAt, _ = time.Parse(time.RFC3339Nano, h.Get(hdrReceived))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	report := func(err error) {
		if err != nil && o.OnError != nil {
			o.OnError(ev, err)
		}
	}
	_, err := o.Store.Once(ctx, ev.Source+":"+ev.ID, func(ctx context.Context) error { return o.Handle(ctx, ev) })
	if err != nil && !errors.Is(err, kvdedupe.ErrNotMarked) {
		report(err)
		// Redelivered after the delay, so the effect is retried; a failed
		// nak is redelivered after AckWait instead.
		report(m.NakWithDelay(o.RetryDelay))
		return
	}
	report(err) // ErrNotMarked: the effect happened, acknowledge it
	// Done, or a duplicate. A lost ack is redelivered after AckWait and is
	// then a duplicate.
	report(m.Ack())
}

// Stop stops consuming and waits until the handler in progress returned.
func (c *Consumer) Stop() {
	c.cc.Drain()
	<-c.cc.Closed()
}

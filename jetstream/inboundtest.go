package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// InboundFollower reads what HOOKJET_INBOUND stores for one source after the
// moment it was made, for `hookjet inbound test`. Its ordered consumer is
// ephemeral: the server removes it [ReadInactive] after the last read.
type InboundFollower struct {
	oc natsjs.Consumer
}

// StoredInbound is where the gateway stored one inbound webhook.
type StoredInbound struct {
	Seq        uint64 // stream sequence in HOOKJET_INBOUND
	Subject    string // hookjet.inbound.<source>.<type>
	ReceivedAt string // the Hookjet-Received-At header
}

// FollowInbound starts reading HOOKJET_INBOUND from just after its last
// message now, filtered to source, so that a webhook stored from here on
// cannot be missed and nothing older is scanned.
func (n *Node) FollowInbound(ctx context.Context, source string) (*InboundFollower, error) {
	st, err := n.js.Stream(ctx, InboundStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", InboundStream, err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", InboundStream, err)
	}
	oc, err := st.OrderedConsumer(ctx, natsjs.OrderedConsumerConfig{
		FilterSubjects:    []string{InboundPrefix + source + ".>"},
		DeliverPolicy:     natsjs.DeliverByStartSequencePolicy,
		OptStartSeq:       info.State.LastSeq + 1,
		InactiveThreshold: ReadInactive,
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", InboundStream, err)
	}
	return &InboundFollower{oc: oc}, nil
}

// Find reads until the message whose Hookjet-Inbound-Id is id, or until ctx
// is done.
func (f *InboundFollower) Find(ctx context.Context, id string) (StoredInbound, error) {
	for {
		m, err := f.oc.Next(natsjs.FetchMaxWait(fetchWait(ctx)))
		switch {
		case err == nil:
			if m.Headers().Get(HdrInboundID) == id {
				meta, err := m.Metadata()
				if err != nil {
					return StoredInbound{}, err
				}
				return StoredInbound{Seq: meta.Sequence.Stream, Subject: m.Subject(), ReceivedAt: m.Headers().Get(HdrReceivedAt)}, nil
			}
		case !errors.Is(err, natsjs.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout):
			return StoredInbound{}, err
		}
		if ctx.Err() != nil {
			return StoredInbound{}, ctx.Err()
		}
	}
}

// fetchWait is how long one Next may wait: a second, less when ctx ends
// sooner (the client refuses less than a millisecond).
func fetchWait(ctx context.Context) time.Duration {
	wait := time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl))
	}
	return max(wait, time.Millisecond)
}

// CheckInboundConsumer reports whether the durable consumer name exists on
// HOOKJET_INBOUND (an error wrapping natsjs.ErrConsumerNotFound when not).
func (n *Node) CheckInboundConsumer(ctx context.Context, name string) error {
	return checkInboundConsumer(ctx, n.js, name)
}

// checkInboundConsumer says in words why the durable consumer name on
// HOOKJET_INBOUND cannot be waited for: NATS's own errors ("nats: API
// error: code=404 err_code=10014 ...") name neither what is missing nor
// what to do.
func checkInboundConsumer(ctx context.Context, js natsjs.JetStream, name string) error {
	_, err := js.Consumer(ctx, InboundStream, name)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, natsjs.ErrInvalidConsumerName):
		return fmt.Errorf("%q is not a consumer name (letters, digits, - and _; no dots, spaces or wildcards)", name)
	case errors.Is(err, natsjs.ErrStreamNotFound):
		return fmt.Errorf("stream %s does not exist on this NATS: is hookjet serve running with inbound.listen, and is --config the file it uses?", InboundStream)
	case errors.Is(err, natsjs.ErrConsumerNotFound):
		return fmt.Errorf("no consumer %q on stream %s: the internal consumer must exist before the test (its durable name), e.g. nats consumer ls %s", name, InboundStream, InboundStream)
	case errors.Is(err, nats.ErrNoResponders), errors.Is(err, natsjs.ErrJetStreamNotEnabled):
		return fmt.Errorf("JetStream does not answer on this NATS (is it enabled, and is nats.url the server hookjet uses?): %w", err)
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("NATS did not answer in time while looking up consumer %q: %w", name, err)
	}
	return fmt.Errorf("look up consumer %q on %s: %w", name, InboundStream, err)
}

// WaitInboundAcked polls the ack floor of the durable consumer name on
// HOOKJET_INBOUND until it reaches seq, or until ctx is done.
func (n *Node) WaitInboundAcked(ctx context.Context, name string, seq uint64) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		c, err := n.js.Consumer(ctx, InboundStream, name)
		if err == nil {
			info, err := c.Info(ctx)
			if err == nil && info.AckFloor.Stream >= seq {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("consumer %s has not acked seq %d: %w", name, seq, ctx.Err())
		case <-t.C:
		}
	}
}

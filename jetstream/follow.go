package jetstream

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// A stream followed into a local store (HOOKJET_LOG into the delivery
// log's index, HOOKJET_SEEN into the dedupe ledger) is read by an ordered
// consumer from the sequence after the store's position; an error starts
// the reading again after followRetry, until the follower is closed.

// keepFollowing runs follow until ctx ends, starting it again after
// followRetry whenever it stops; what names the follower in the log.
func keepFollowing(ctx context.Context, log *slog.Logger, what string, follow func(context.Context) error) {
	for {
		err := follow(ctx)
		if ctx.Err() != nil {
			return
		}
		log.Warn(what+" stopped; starting again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(followRetry):
		}
	}
}

// readFrom reads stream from the sequence start on and calls apply with
// each message and its stream sequence, until ctx ends or apply or the
// reading fails. Every identityCheck it calls same, which fails when the
// stream is not the one the store was built from any more: an ordered
// consumer carries on from the sequence it had reached when a stream is
// deleted and created again.
func readFrom(ctx context.Context, js natsjs.JetStream, stream string, start uint64, same func(context.Context) error, apply func(natsjs.Msg, uint64) error) error {
	checked := time.Now()
	return read(ctx, js, stream, start, identityCheck, func(ctx context.Context, _ bool) error {
		if time.Since(checked) < identityCheck {
			return nil
		}
		checked = time.Now()
		return same(ctx)
	}, func(m natsjs.Msg, meta *natsjs.MsgMetadata) error {
		return apply(m, meta.Sequence.Stream)
	})
}

// ReadLane reads HOOKJET_ORDERED from the sequence start on and calls apply
// with each entry and its metadata, until ctx ends or the reading
// fails; idle is called whenever nothing has arrived for wait: every entry
// stored before the wait began has been handed over by then, or deleted.
func ReadLane(ctx context.Context, js natsjs.JetStream, start uint64, wait time.Duration, apply func(natsjs.Msg, *natsjs.MsgMetadata) error, idle func()) error {
	return read(ctx, js, LaneStream, start, wait, func(_ context.Context, timedOut bool) error {
		if timedOut {
			idle()
		}
		return nil
	}, apply)
}

// read reads stream from the sequence start on with an ordered consumer
// and calls apply with each message and its metadata, until ctx
// ends or apply, tick or the reading fails. tick is called after each wait
// for a message (timedOut: none came within wait).
func read(ctx context.Context, js natsjs.JetStream, stream string, start uint64, wait time.Duration, tick func(context.Context, bool) error, apply func(natsjs.Msg, *natsjs.MsgMetadata) error) error {
	cons, err := js.OrderedConsumer(ctx, stream, natsjs.OrderedConsumerConfig{
		DeliverPolicy: natsjs.DeliverByStartSequencePolicy, OptStartSeq: start, InactiveThreshold: ReadInactive,
	})
	if err != nil {
		return err
	}
	it, err := cons.Messages(natsjs.PullMaxMessages(1000))
	if err != nil {
		return err
	}
	stopIt := context.AfterFunc(ctx, it.Stop)
	defer func() {
		stopIt()
		it.Stop()
	}()
	for {
		m, err := it.Next(natsjs.NextMaxWait(wait))
		timedOut := errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
		if err := tick(ctx, timedOut); err != nil {
			return err
		}
		if timedOut {
			continue
		}
		if err != nil {
			return err
		}
		meta, err := m.Metadata()
		if err != nil {
			continue
		}
		if err := apply(m, meta); err != nil {
			return err
		}
	}
}

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
	return readFromOpts(ctx, js, stream, start, false, same, apply)
}

// readFromOpts is readFrom, of the messages' headers alone with
// headersOnly.
func readFromOpts(ctx context.Context, js natsjs.JetStream, stream string, start uint64, headersOnly bool, same func(context.Context) error, apply func(natsjs.Msg, uint64) error) error {
	checked := time.Now()
	return read(ctx, js, stream, start, headersOnly, identityCheck, func(ctx context.Context, _ bool, _ func() bool) error {
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
// fails. idle is called whenever nothing has arrived for wait, with
// caughtUp, which asks the server whether every entry stored before it
// was called has been handed over (or deleted). Silence alone says
// nothing: an ordered consumer being created again after a reconnect or a
// leader change delivers nothing for seconds while entries wait.
func ReadLane(ctx context.Context, js natsjs.JetStream, start uint64, wait time.Duration, apply func(natsjs.Msg, *natsjs.MsgMetadata) error, idle func(caughtUp func() bool)) error {
	return read(ctx, js, LaneStream, start, false, wait, func(_ context.Context, timedOut bool, caughtUp func() bool) error {
		if timedOut {
			idle(caughtUp)
		}
		return nil
	}, apply)
}

// read reads stream from the sequence start on with an ordered consumer
// and calls apply with each message and its metadata, until ctx
// ends or apply, tick or the reading fails. tick is called after each wait
// for a message (timedOut: none came within wait), with caughtUp (see
// handedAll). With headersOnly the messages come without their data.
func read(ctx context.Context, js natsjs.JetStream, stream string, start uint64, headersOnly bool, wait time.Duration, tick func(context.Context, bool, func() bool) error, apply func(natsjs.Msg, *natsjs.MsgMetadata) error) error {
	cons, err := js.OrderedConsumer(ctx, stream, natsjs.OrderedConsumerConfig{
		DeliverPolicy: natsjs.DeliverByStartSequencePolicy, OptStartSeq: start, InactiveThreshold: ReadInactive,
		HeadersOnly: headersOnly,
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
	var last handed
	caughtUp := func() bool { return last.all(ctx, cons) }
	for {
		m, err := it.Next(natsjs.NextMaxWait(wait))
		timedOut := errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded)
		if err := tick(ctx, timedOut, caughtUp); err != nil {
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
		last = handed{consumer: meta.Consumer, seq: meta.Sequence.Consumer}
	}
}

// handed is the last message a reader handed over: the server-side
// consumer that delivered it and its delivery sequence there.
type handed struct {
	consumer string
	seq      uint64
}

// all asks the server whether cons has nothing left to deliver and every
// message it delivered was handed over: its current server-side consumer
// delivered up to h (or, created again after h was handed over, nothing
// yet). A consumer being created again answers an error: not caught up.
func (h handed) all(ctx context.Context, cons natsjs.Consumer) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	info, err := cons.Info(ctx)
	if err != nil || info.NumPending != 0 {
		return false
	}
	if info.Name == h.consumer {
		return info.Delivered.Consumer == h.seq
	}
	return info.Delivered.Consumer == 0
}

package consume

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/backoff"
)

// fanoutBytes bounds what the fan-out's pulls bring into the client and the
// events it holds ahead (see fanoutAhead), and the engine bounds the payloads of events being delivered
// (128 MB): with 1 MB events and slow endpoints, memory stays near 32 + 128 MB whatever
// the number of endpoints. fanoutBytes stays under the subscription's
// pending limit (64 MB), so a pull never drops a message, and twice over
// the largest event config allows (security.max_payload_bytes, at most
// 16 MiB): a pull whose byte limit an event exceeds would never deliver it.
const fanoutBytes = 32 << 20

// fanoutWait is how long one fan-out pull waits at the server for events:
// an idle process asks once per fanoutWait for each pull it keeps open. A
// stopping process listens at most fanoutStopWait for its open pulls' last
// events, which it hands back.
const (
	fanoutWait     = 5 * time.Second
	fanoutStopWait = time.Second
)

// fanoutAhead bounds the events the fan-out holds pulled ahead of its
// unsettled slots, asked for in pulls of fanoutChunk, several at a time.
// Within it the fan-out holds about aheadHorizon of what its workers took
// per second lately, at least 2 x fanoutChunk.
//
// A standalone nats-server delivers a pull's events on the same goroutine
// that stores the stream's incoming messages (one fsync each with
// nats.sync always): while a burst of publishes is being stored, every pull
// waits for all of them, seconds for thousands, and then gets at most what
// it asked for. One pull at a time asked for what was free when it went
// out, a few events, and the fan-out then sat idle for the next round of
// stores. Pulls that go out as room frees, and the events held ahead, keep
// the deliveries going meanwhile. What is held ahead is bounded in time so
// that it is taken well within AckWait (at least 30 s) even after such a
// wait; an event held for half of AckWait (the process paused) is handed
// back instead of delivered.
const (
	fanoutAhead  = 8192
	fanoutChunk  = 1024
	aheadHorizon = 10 * time.Second
	aheadTick    = 500 * time.Millisecond
)

// Pulled is an event held ahead, when it was read (At), and when the pull
// that brought it was sent (Sent: its AckWait runs from no earlier).
type Pulled struct {
	Msg      natsjs.Msg
	At, Sent time.Time
}

// Options are what Run pulls with and whom it hands the events to.
type Options struct {
	Conn    *nats.Conn // the connection to pull on
	MaxMsg  int64      // the largest message the stream takes
	Workers int        // how many events are handed over at once
	// Take is called for each event pulled, on one of Workers goroutines;
	// it settles the event (acks, naks, or hands it back) in its own time.
	Take func(ctx context.Context, p Pulled)
	Log  *slog.Logger
}

// Run pulls cons until ctx is done or the consumer is gone, and returns why
// it stopped. Events pulled are handed to o.Take; at the end, what was
// pulled and not taken is handed back to JetStream.
func Run(ctx context.Context, cons natsjs.Consumer, o Options) error {
	var workers, recv sync.WaitGroup
	// The pulls only fill the events held ahead; the fan-out workers take
	// each with an unsettled slot: a slow NATS call of one event (a task's
	// publish over the network) delays one worker, not the pulls.
	ahead := newAheadQueue(o.MaxMsg)
	info := cons.CachedInfo()
	p := newPuller(o.Conn, info.Stream, info.Name, ahead)
	workers.Add(o.Workers)
	for range o.Workers {
		go func() {
			defer workers.Done()
			for ev := range ahead.queue {
				ahead.took(ev)
				o.Take(ctx, ev)
			}
		}()
	}
	paceCtx, stopPace := context.WithCancel(ctx)
	workers.Go(func() { ahead.pace(paceCtx) })
	listen, stopListening := listenPast(ctx, fanoutStopWait)
	failed := make(chan error, 4)
	recv.Go(func() {
		if err := p.receive(ctx, listen, failed, o.Log.Debug); err != nil {
			report(failed, err)
		}
	})
	defer func() {
		stopPace()
		if ctx.Err() == nil {
			p.endAll() // the consumer is gone: nothing more comes
		}
		for p.openCount() > 0 && listen.Err() == nil {
			backoff.Sleep(listen, 10*time.Millisecond) // the open pulls' last events
		}
		stopListening()
		recv.Wait()
		p.handBack(o.Log.Debug)
		close(ahead.queue)
		workers.Wait()
	}()
	for {
		err := nextPull(ctx, p, failed)
		if err == nil {
			return ctx.Err()
		}
		if errors.Is(err, natsjs.ErrConsumerDeleted) || errors.Is(err, natsjs.ErrConsumerNotFound) {
			return err
		}
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, errPullUnanswered) {
			// A consumer deleted while no pull was waiting sends no
			// "consumer deleted"; its pulls go unanswered. Ask.
			ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, ierr := cons.Info(ictx)
			cancel()
			if errors.Is(ierr, natsjs.ErrConsumerNotFound) {
				return ierr
			}
		}
		o.Log.Debug("consume events", "err", err)
		backoff.Sleep(ctx, 100*time.Millisecond) // NATS reconnecting, or a leader change
	}
}

// listenPast returns a context that ends grace after ctx does, and a
// function that ends it at once; call it when done with the context.
func listenPast(ctx context.Context, grace time.Duration) (context.Context, func()) {
	listen, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
		case <-done:
		}
		cancel()
	})
	return listen, func() {
		stop()
		close(done)
		cancel()
	}
}

// nextPull sends pulls of fanoutChunk events as room for them frees, until
// ctx is done (nil) or a pull fails (its error).
func nextPull(ctx context.Context, p *puller, failed <-chan error) error {
	ahead := p.ahead
	for {
		select {
		case err := <-failed:
			return err
		default:
		}
		if ok, err := ahead.take(ctx, fanoutChunk, failed); !ok {
			return err
		}
		limit := ahead.pullBytes.Load()
		if !ahead.bytes.Acquire(ctx, limit) {
			ahead.give(fanoutChunk)
			return nil
		}
		if err := p.request(fanoutChunk, limit); err != nil {
			ahead.give(fanoutChunk)
			ahead.bytes.Release(limit)
			return err
		}
	}
}

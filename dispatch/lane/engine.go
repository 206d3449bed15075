package lane

import (
	"context"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
)

// Engine is what the lane asks of the delivery engine (package dispatch
// implements it in lane_engine.go). The lane decides which entry of which
// key may go and when; the engine admits and attempts it as it would any
// delivery, and hands the end back through the Settle the lane gave.
type Engine interface {
	// Attempt admits a key's first entry at its endpoint (in-flight cap,
	// rate limit, breaker, disabled, held) and, admitted, attempts it on a
	// goroutine of the engine's; an entry past its endpoint's
	// retry.max_age is dead-lettered as expired instead, admitted or not.
	// Started: the engine calls a.Settle later, exactly as Settle says.
	Attempt(ctx context.Context, a Attempt) Verdict
	// Overflow dead-letters m, an entry of endpoint ep the lane took out
	// of its key, as overflow because of why; done(true) once the dead
	// letter is stored, done(false) when it was not (the lane files the
	// entry again).
	Overflow(ep string, m Msg, why string, done func(ok bool))
	// MaxBacklog is endpoint ep's max_backlog (0: none); false when the
	// endpoint is not (or not yet) in this process's table.
	MaxBacklog(ep string) (int, bool)
	// LastSuccess is when endpoint ep last answered 2xx, as its breaker
	// keeps it (persisted); zero: never, or not known. Asked only of an
	// endpoint past its bounds (bound.go).
	LastSuccess(ep string) time.Time
	// AckFloor is the fan-out consumer's ack floor: every event at or below
	// it has had its entries stored in the lane.
	AckFloor(ctx context.Context) (uint64, error)
	// Label is endpoint ep's metric label.
	Label(ep string) string
	// Go runs f on a goroutine the engine waits for at shutdown, with its
	// deliveries in flight.
	Go(f func())
}

// Attempt is a key's first entry, handed to the engine to attempt.
type Attempt struct {
	// Endpoint is the endpoint's id.
	Endpoint string
	// Published is when the entry's event was published (a replay's:
	// when it was stored): its endpoint's retry.max_age counts from it.
	Published time.Time
	// Front is a replay: it goes before the key's events, and never
	// expires.
	Front bool
	// Load reads the entry's message: kept in memory, or read from
	// HOOKJET_ORDERED.
	Load func(ctx context.Context) (Msg, error)
	// Settle is how the attempt ends.
	Settle Settle
}

// Verdict is the engine's answer to Attempt.
type Verdict struct {
	// Started: the engine took the entry (attempted, or dead-lettered as
	// expired) and calls its Settle.
	Started bool
	// Gone: the endpoint is not in this process's table (deleted, or not
	// yet loaded).
	Gone bool
	// Otherwise the key waits Wait (0: it is looked at again at once), held
	// for Why ("": not held, only delayed): the endpoint's admission cause.
	Wait time.Duration
	Why  string
}

// Settle are the lane's callbacks for an attempt the engine started. The
// engine calls Skip (the entry was never attempted) or Done (settled), after
// zero or more Retry calls.
type Settle struct {
	// Done settles the attempt: delivered or dead-lettered (Outcome.OK),
	// or to come back (a NATS failure, a shutdown).
	Done func(Outcome)
	// Retry stores the entry again with the attempt's state (r.Msg, built
	// by the engine, due after r.Wait) and has the key wait for it; an
	// error when it could not (the engine then calls Done, not OK).
	Retry func(r Retry) error
	// Skip: the engine did not attempt the entry. err nil: settled without
	// an attempt (another incarnation's or tenant's entry, or one the
	// ledger says this process delivered); an error from Load otherwise.
	Skip func(err error)
}

// Outcome is how an attempt settled.
type Outcome struct {
	// OK: delivered or dead-lettered; false: to come back.
	OK bool
	// Hold, when the delivery was dead-lettered at an endpoint with
	// ordering_on_dead_letter: hold, is the dead letter the key waits for.
	Hold *Hold
	// Log logs about the delivery, with its endpoint and event.
	Log func(level slog.Level, msg string, args ...any)
}

// Hold is a dead letter its key waits behind.
type Hold struct {
	EventID, EventKey string
	Attempts          int
}

// Retry is an attempt's entry to store again.
type Retry struct {
	// Msg is the entry with the attempt's state, due after Wait (SetDue).
	Msg  *nats.Msg
	Wait time.Duration
}

// Msg is an entry's message as stored in HOOKJET_ORDERED.
type Msg struct {
	Header nats.Header
	Data   []byte
	Stored time.Time
}

// Options are what the lane needs besides the engine.
type Options struct {
	// JS and NC reach HOOKJET_ORDERED and the lease's bucket.
	JS natsjs.JetStream
	NC *nats.Conn
	// Sends is the engine's context for requests that must complete once
	// begun (removals, retries, hold markers): it ends after the
	// shutdown's grace period.
	Sends context.Context
	// Log; nil: discarded.
	Log *slog.Logger
	// Now; nil: time.Now.
	Now func() time.Time
	// Held is hookjet_ordering_keys_held (by endpoint label); nil: none
	// reported.
	Held *prometheus.GaugeVec
	// Share is an endpoint's share of HOOKJET_ORDERED in bytes: 1/Shares
	// of the stream's MaxBytes (Shares is said in an overflow's reason).
	Share  int64
	Shares int
	// Busy reports whether an admission cause only says the endpoint is
	// busy (settle.BusyCause): its keys do not count as failing toward
	// the endpoint's bounds. nil: none is.
	Busy func(cause string) bool
}

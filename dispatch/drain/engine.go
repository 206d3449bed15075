package drain

import (
	"context"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// Engine is what the drains need of the delivery engine.
type Engine interface {
	// Endpoint is endpoint id; nil when it is not an endpoint of this
	// process (now).
	Endpoint(id string) Endpoint
	// LongestWait is the longest retry.cap or timeout of the endpoints:
	// how long after it was stored a schedule may take to come due.
	LongestWait() time.Duration
}

// Endpoint is one endpoint as its drain sees it, with the settings that
// were in force when the engine handed it out (Current hands out those in
// force now).
type Endpoint interface {
	// Gate says whether a drain of the endpoint may start at now:
	// disabled, its tasks are only expired past retry.max_age; a
	// notBefore after now (a hold, an open breaker) defers it until then.
	Gate(now time.Time) (disabled bool, notBefore time.Time)
	// Config is the endpoint's configuration (its drain consumer is made
	// from it); never changed.
	Config() *config.Endpoint
	// Current is the endpoint with the settings in force now.
	Current() Endpoint
	// AdmitNow admits one delivery: an in-flight slot (waiting for one at
	// most poll), a rate-limit token and the breaker's permission. When
	// the endpoint cannot take one it returns nil and when to look again.
	AdmitNow(ctx context.Context, poll time.Duration) (Admission, time.Time)
	// Admit admits one more delivery without waiting; nil when the
	// endpoint cannot take it now.
	Admit() Admission
	// Offer hands the engine the task msg to deliver, holding adm. The
	// engine calls settle exactly once: true when the task is finished
	// with (it is acked), false when it must come back (it is naked).
	Offer(ctx context.Context, msg natsjs.Msg, meta *natsjs.MsgMetadata, adm Admission, settle func(ok bool))
	// Expire dead-letters the task raw, read off the stream while the
	// endpoint is disabled, if it is past retry.max_age. fresh: it is not,
	// and stays; ok false: the dead letter was not stored.
	Expire(raw *natsjs.RawStreamMsg) (fresh, ok bool)
	// Consumed counts the task raw taken off the stream.
	Consumed(raw *natsjs.RawStreamMsg)
	// Found raises the engine's count of the endpoint's waiting
	// deliveries to the n tasks the server holds for it.
	Found(n uint64)
}

// Admission is what one delivery holds once admitted, until the engine
// spends it on an attempt; Release gives back one never offered.
type Admission interface {
	Release()
}

package query

import (
	"context"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// Source is what the engine tells the queries: facts it keeps in memory,
// as values of this package. Package dispatch implements it
// (dispatch/query_source.go).
type Source interface {
	// IDs returns the ids of the endpoints in force, sorted.
	IDs() []string
	// Endpoint returns what the engine knows of endpoint id at now, and
	// false when no endpoint id is in force.
	Endpoint(id string, now time.Time) (Endpoint, bool)
	// Each calls fn with what the engine knows of every endpoint in force
	// at now, in no order, holding no lock of the engine's.
	Each(now time.Time, fn func(Endpoint))
	// Owner returns whose dead letters are endpoint id's, and false when
	// no endpoint id is in force.
	Owner(id string) (Owner, bool)
	// Backlogs calls fn with the number of tasks this process stored for
	// each endpoint in force and not yet consumed (negative counts as 0).
	Backlogs(fn func(id string, tasks int64))
	// FirstRetry returns when the earliest retry of endpoint id this
	// process stored is due; zero when none is.
	FirstRetry(id string) time.Time
	// LastTest returns the record of the last attempt of a test event to
	// endpoint id made by this process.
	LastTest(id string) (attempt.Record, bool)
	// Process returns this process's own figures at now.
	Process(now time.Time) Process
	// Lane returns what waits in the ordered lane for the endpoints ids
	// (nil: every endpoint), those with nothing there left out; nil when
	// none of them orders by key or the lane's owner does not answer.
	Lane(ctx context.Context, ids []string) map[string]LaneView
	// Match returns the ids of the endpoints in force that an event of
	// type typ with tenant tenant goes to by pattern and tenant (the
	// fan-out's index lookup), in no order.
	Match(tenant, typ string) []string
	// NoteAckFloor tells the engine the fan-out consumer's ack floor that
	// a summary read.
	NoteAckFloor(seq uint64)
}

// Requeuer hands a dead letter back to the engine (Queries.Replay).
type Requeuer interface {
	// Requeue stores dead letter m as a task of its endpoint, with fresh
	// attempts. It reports false, storing nothing, when m's endpoint is
	// not in force.
	Requeue(ctx context.Context, m jetstream.DLQMsg) (bool, error)
}

// GaugeSink takes the figures RunGauges reads.
type GaugeSink interface {
	SetGauges(Gauges)
}

// Endpoint is what the engine knows of one endpoint in force.
type Endpoint struct {
	// Config is the definition in force: the engine's copy, never
	// changed. Read it only.
	Config *config.Endpoint
	// Disabled by an operator or by the engine, for DisabledReason.
	Disabled       bool
	DisabledReason string
	// HoldUntil and HoldCause: a receiver's Retry-After hold (zero: none).
	HoldUntil time.Time
	HoldCause string
	// InFlight counts the requests out now in this process.
	InFlight int
	// LastDelivery is this process's last 2xx; nil: none.
	LastDelivery *attempt.LastDelivery
	// RateLimit is the limiter's rate in requests per second (0: no
	// limit) and Tokens its tokens at the time asked.
	RateLimit, Tokens float64
	// Taken tasks were taken by a process that has not settled them;
	// NATS gives them back by TakenUntil.
	Taken      int
	TakenUntil time.Time
}

// Owner is what a dead letter must carry to belong to the endpoint in
// force with its id (dead letters: deadletters.go).
type Owner struct {
	// Incarnation is the endpoint's (Hookjet-Endpoint-Created); "" for a
	// config-file endpoint.
	Incarnation string
	// Tenant is the endpoint's tenant; "": it receives every tenant's
	// events.
	Tenant string
}

// Process is what this process counts itself.
type Process struct {
	// Endpoints is the number of endpoints in force.
	Endpoints int
	// Disabled counts the endpoint states that say disabled, of endpoints
	// in force or not; DisabledInForce only those of endpoints in force.
	Disabled, DisabledInForce int
	// InFlight counts the deliveries in flight.
	InFlight int64
	// DeliveredLastHour and FailedLastHour count this process's attempts
	// of the last hour.
	DeliveredLastHour, FailedLastHour int64
}

// LaneView is what waits in the ordered lane for one endpoint, as the
// lane's owner sees it.
type LaneView struct {
	// Waiting counts the deliveries waiting in the lane, in flight
	// included; Retrying those of them waiting for a retry's due time.
	Waiting, Retrying uint64
	// Oldest is when the longest-waiting of them was published.
	Oldest time.Time
	// Held are the keys held behind an earlier delivery of their own.
	Held *api.HeldKeys
}

// Gauges are the figures of the gauges read from JetStream.
type Gauges struct {
	// OldestPendingSeconds is the age of the oldest delivery waiting.
	OldestPendingSeconds float64
	// DeadLetters counts the messages in HOOKJET_DLQ.
	DeadLetters uint64
	// Pending counts the deliveries waiting per endpoint id (tasks,
	// retries, the ordered lane's); nil when HOOKJET_TASKS could not be
	// read. It may name endpoints no longer in force.
	Pending map[string]uint64
	// Enabled and Disabled count the endpoints in force; BreakerOpen the
	// open breakers of this process.
	Enabled, Disabled, BreakerOpen int
}

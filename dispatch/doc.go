// Package dispatch delivers events to endpoints: it fans each event of the
// shared consumer out to the endpoints the endpoint table matches it to
// (package routing), admits each delivery through the endpoint's in-flight
// cap, rate limit and breaker, attempts it, decides what the result means
// ([decide], a pure function over the outcomes table), and carries that
// out: ack, a scheduled retry, a parked task, a dead letter, a disabled or
// held endpoint. Deliveries that cannot go now wait as tasks on their
// endpoint's own subject, drained by short-lived consumers (package
// dispatch/drain, served through drain_engine.go), so consumers
// stay few whatever the number of endpoints (see [Dispatcher]).
//
// The table decides which endpoints are in force; the dispatcher keeps
// each one's runtime (settings snapshot, in-flight slots, rate limiter,
// metric series) and puts the table's changes into effect (table.go). It
// feeds the table from the config file, the admin API's KV bucket and the
// other processes' config endpoints, gathers the facts api.Waits turns into
// why an endpoint's deliveries wait (waiting.go), computes the status the
// admin API shows, replays and redelivers, and runs the MaxDeliver safety
// net and the upgrade from the first design.
package dispatch

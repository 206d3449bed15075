// Package dispatch delivers events to endpoints: it fans each event of the
// shared consumer out to the endpoints whose patterns match it (an
// in-memory index), admits each delivery through the endpoint's in-flight
// cap, rate limit and breaker, attempts it, decides what the result means
// ([decide], a pure function over the outcomes table), and carries that
// out: ack, a scheduled retry, a parked task, a dead letter, a disabled or
// held endpoint. Deliveries that cannot go now wait as tasks on their
// endpoint's own subject, drained by short-lived consumers, so consumers
// stay few whatever the number of endpoints (see [Dispatcher]).
//
// It also applies the endpoints of the config file and of the KV buckets,
// computes the status the admin API shows, replays and redelivers, and runs
// the MaxDeliver safety net and the upgrade from the first design.
package dispatch

// Package dispatch delivers events to endpoints: it fans each event of the
// shared consumer out to the endpoints the endpoint table matches it to
// (package routing, then each endpoint's filter), shapes each delivery's
// request (the endpoint's transform), admits it through the endpoint's
// in-flight cap, rate limit and breaker, and sends it through the
// endpoint's destination; settlement (package dispatch/settle) decides what
// the result means and carries that out: ack, a scheduled retry, a parked
// task, a dead letter, a disabled or held endpoint. Deliveries that cannot
// go now wait as tasks on their endpoint's own subject, drained by
// short-lived consumers (package dispatch/drain, served through
// drain_engine.go), so consumers stay few whatever the number of endpoints
// (see [Dispatcher]); keyed deliveries to an endpoint that orders by key
// take their turn in the ordered lane (package dispatch/lane).
//
// The table decides which endpoints are in force; the dispatcher keeps
// each one's runtime (settings snapshot, in-flight slots, rate limiter,
// metric series) and puts the table's changes into effect (table.go). It
// tells the operator's questions (package dispatch/query) and actions
// (package dispatch/operate) what only it knows, trims the event log, and
// runs the upgrade from the first design (package dispatch/upgrade).
package dispatch

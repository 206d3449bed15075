// Package lane is the ordered lane: per-key ordering of the deliveries to
// endpoints with ordering: key.
//
// An endpoint with ordering: key receives the deliveries of events that
// carry the same Hookjet-Ordering-Key one at a time, in publish order; the
// next is not attempted before the previous is settled (delivered,
// dead-lettered or expired). A key that fails holds only itself.
//
// How:
//   - The fan-out (any process) does not attempt such a delivery: it
//     appends it to HOOKJET_ORDERED on the endpoint's subject, a task-shaped
//     entry with the payload and the event's HOOKJET_EVENTS sequence, and
//     settles it once stored. Several fan-out workers and processes append
//     concurrently, so entries of one key may be stored out of order.
//   - One process at a time, the lane's owner (lease.go), reads the whole
//     stream with an ordered consumer and keeps, per key with entries, the
//     entries sorted by event sequence (replays first: front entries). It
//     attempts only a key's first entry, and only once the fan-out
//     consumer's ack floor has reached the sequence just below it: the
//     fan-out acks an event after its entries are stored, so by then every
//     earlier event of the key has its entry in the stream, and the first
//     one is the right one whatever order the appends came in.
//   - An attempt goes through the endpoint's normal admission (in-flight
//     cap, rate limit, breaker, disabled, held); a failed one is stored
//     again with its attempt state and due time (a replacement entry, then
//     the old one deleted) and the key waits for it; a settled one is
//     removed from the stream (mostly by one purge for many:
//     remove.go) and then the key's next entry goes.
//   - After a dead letter a key with ordering_on_dead_letter: hold keeps a
//     hold marker at its front until the dead letter is replayed (the
//     replay goes first) or discarded.
//
// Why this shape (docs/architecture.md, per-key ordering): a JetStream
// consumer per key would cost the servers a consumer per key; a subject
// per key would cost them an index entry per key; a pinned fan-out would
// serialise every event. Here the servers hold one subject per ordered
// endpoint and the entries waiting; memory in the owner grows with the
// entries waiting (about 200 B each), never with keys that have none.
//
// What it owns: HOOKJET_ORDERED's entries once stored (Into, Front,
// SetDue and Release name them; Reserve and Enqueue store the fan-out's),
// the lease in HOOKJET_ORDERING, the keys and their order, the ack floor's
// barrier, each ordered endpoint's bounds in the lane, the removal and the
// moves of entries, and what the views show of it (View, Ask, Answer).
//
// What it may import: the vocabulary below it (jetstream's names and
// readers, api's view types), nats.go and prometheus. Never dispatch: what
// it needs of the delivery engine (admission, the attempt, dead letters,
// the fan-out's ack floor, an endpoint's facts) it asks through Engine,
// declared here and implemented by dispatch (lane_engine.go); the engine
// hands an attempt's end back through the Settle callbacks the lane gave.
// A delivery's walk: the fan-out meets a keyed delivery of an ordered
// endpoint, Reserve and Enqueue store it; the Owner's feed files it under
// its key; consider lets the key's first entry go once the floor allows;
// the runner hands it to Engine.Attempt; the engine attempts it like any
// delivery and calls Settle.Done (the entry is removed, the next goes),
// Settle.Retry (stored again, due later) or Settle.Skip.
//
// The parts (see Owner) share one lock and one table of keys; floorGate
// and tally are state only, with tests that need no NATS.
package lane

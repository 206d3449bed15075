// Package dedupe is hookjet's local idempotency and delivery ledger, kept in
// the state file (bbolt) next to the breaker state.
//
// It answers two questions quickly:
//
//   - FirstSeen: was this event id already accepted under another stream
//     sequence? JetStream forgets ids after its duplicate window; the ledger
//     remembers them for its ttl.
//   - Delivered: has this endpoint already answered 2xx for this event id?
//     After a crash between a 2xx and the ack, the redelivered message is
//     acked without sending it again.
//
// Writes are queued in memory and committed by the batcher (Run) in
// transactions of up to WithBatch's maxSize records: one commit for many
// deliveries. MarkDelivered calls back once its record is committed, so a
// worker acks a message only after the ledger can answer for it.
//
// A commit is durable as the caller opened the file. hookjet serve leaves
// NoSync off with nats.sync: always (the default), so every commit is an
// fsync (bbolt's two: data pages, then the meta page) and a power cut loses
// none; with a lazy nats.sync it sets NoSync, so a commit reaches the page
// cache (a crash of the process loses none) and the serve loop fdatasyncs
// the file every second, which bounds what a power loss can take.
//
// # Storage
//
// Four buckets: "dedupe_positions" (how far a follower of a stream, such
// as HOOKJET_SEEN's, has applied it: name → sequence and the creation
// time of the stream it followed, so that a stream created anew is noticed),
// "dedupe_seen" (event id → version, sequence, time),
// "dedupe_delivered" (length-prefixed endpoint and event id → version,
// time) and "dedupe_expiry", a time-ordered index (time, kind, key) that
// the sweep in Run walks to delete entries older than the ttl in bounded
// chunks, so storage stays bounded. Entries older than the ttl are ignored
// by lookups even before the sweep deletes them.
package dedupe

// Package publish takes events from applications and stores them in
// HOOKJET_EVENTS with group commit: concurrent publish requests are
// collected into atomic batches of at most [MaxBatch] events, each stored
// with one synced write, and every request is answered once its batch is
// stored (as durably as a plain NATS publish under the same nats.sync).
//
// Two ways in share one [Committer]:
//
//   - HTTP: [NewHandler] serves POST /api/v1/events, one event
//     {"id"?, "type", "data", "tenant"?, "key"?} or {"events": [...]} (at
//     most [MaxBatch]), answered 202 {"ids": [...], "duplicates": n}; 400
//     naming every bad field (events[3].type), 413, 401, 503 when
//     JetStream cannot store.
//   - NATS request/reply: [Committer.Answer] turns a request to
//     hookjet.publish.<type> (headers Nats-Msg-Id, Hookjet-Tenant,
//     Hookjet-Ordering-Key; data: the payload) into the reply {"id",
//     "duplicate", "stream", "seq"} or, like the HTTP API's 400, {"error",
//     "field", "errors": [{"field", "error"}]} naming every bad field (a
//     request whose headers name two ids, tenants or keys included).
//     Package jetstream
//     subscribes to the subject and sends the replies.
//
// Events are idempotent by id (the stream's duplicate window and, past
// it, the dedupe ledger given to [WithLedger], a local read): an id
// stored before is reported as a duplicate of its first copy and not
// stored again; an event
// without an id gets one (evt_ and random). The queue is bounded: a
// request that does not fit, or that JetStream cannot store, fails with
// [ErrBusy] or [ErrUnavailable] (HTTP 503).
//
// The package imports no NATS: it declares the [Store] it needs with its
// own [Event] and [Result], and package jetstream's EventPublisher
// implements it with nats-server's atomic batch publish.
package publish

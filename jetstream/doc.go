// Package jetstream is hookjet's glue to NATS JetStream: the embedded
// server, the connection, the streams, consumers and KV buckets hookjet
// owns (their names, configurations and upgrades), the endpoint store, the
// inbound store, the outbox publisher, the delivery log's writer and
// reader, and reading the dead-letter stream. It knows nothing of how
// deliveries are decided: that is package dispatch. Where another room
// declares what it needs, this package implements it with that room's
// types: [InboundStore] is an inbound.Store, [EndpointStore] an
// admin.EndpointStore over endpoints.Record, and the dead letters and the
// delivery log's queries are package api's.
//
// Throughout the repository the nats.go client package
// github.com/nats-io/nats.go/jetstream is imported as natsjs, so that this
// package's name stays free. Only this package, dispatch, hookjettest, the
// consumer-side helper webhook/kvdedupe, the examples and the test
// harnesses (test/bench, test/soak) import NATS; the process (package
// server) and the commands (cli) reach it through this package. deliver,
// dedupe, breaker, signature, webhook, api, endpoints, admin, console and
// inbound never import it, even through another package.
//
// # Streams, consumers and buckets
//
//   - HOOKJET_EVENTS (hookjet.events.>): the event log, limits retention,
//     kept for streams.max_age. One durable consumer, hookjet-fanout,
//     shared by every hookjet process; each process also follows it,
//     headers only, into its list index ([EventIndex], eventfollow.go).
//   - HOOKJET_TASKS (work queue): hookjet.tasks.<endpoint> holds deliveries
//     waiting for their endpoint; hookjet.sched.<endpoint>.<event> holds
//     retries as message schedules until they are due. Short-lived durable
//     consumers drain-<endpoint> read one endpoint's tasks each.
//   - HOOKJET_DLQ (hookjet.dlq.<endpoint>): dead letters, limits retention.
//   - HOOKJET_ADVISORIES: MAX_DELIVERIES advisories of the fan-out and drain
//     consumers, the safety net's input.
//   - HOOKJET_OPS (hookjet.ops.>): operational events such as
//     hookjet.ops.endpoint.opened|closed|disabled|enabled|reset and hookjet.ops.dead_letter.
//   - KV HOOKJET_ENDPOINTS: endpoints created through the admin API, by id
//     ([EndpointStore]; secrets and header values sealed).
//   - KV HOOKJET_CONFIG_ENDPOINTS: every process's config-file endpoints,
//     so a process never acks an event for an endpoint only another knows.
//   - KV HOOKJET_ENDPOINT_STATE: disabled and held endpoints.
//   - HOOKJET_SEEN (hookjet.seen.events, hookjet.seen.inbound): the event
//     ids and inbound provider ids accepted, for dedupe.ttl, announced by
//     every process and followed by each into its dedupe ledger
//     ([SeenIDs], seen.go).
//   - HOOKJET_INBOUND (hookjet.inbound.<source>.<type>): webhooks the inbound
//     gateway verified, limits retention ([InboundStore], inbound.go).
//   - HOOKJET_LOG (hookjet.log.<endpoint>): the delivery log (log.go), and
//     each process's index of it ([LogIndex], logfollow.go).
package jetstream

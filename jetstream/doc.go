// Package jetstream is hookjet's glue to NATS JetStream: the embedded server,
// the connection, the streams and consumers hookjet owns, and the dispatcher
// that turns stream messages into webhook deliveries.
//
// Throughout the repository the nats.go client package
// github.com/nats-io/nats.go/jetstream is imported as natsjs, so that this
// package's name stays free. Only this package and cmd/hookjet import NATS.
//
// # Streams and subjects
//
//   - HOOKJET_EVENTS (hookjet.events.>): the events, interest retention.
//     Each endpoint has a durable pull consumer "ep-<id>" whose filter
//     subjects are its event patterns; a message stays until every endpoint
//     that wants it has acked it, and an event no endpoint wants is not
//     stored.
//   - HOOKJET_REPLAY (hookjet.replay.<endpoint>): dead letters sent back to
//     one endpoint, read by one shared consumer.
//   - HOOKJET_DLQ (hookjet.dlq.<endpoint>): dead letters, limits retention.
//   - HOOKJET_OPS (hookjet.ops.>): operational events such as
//     hookjet.ops.endpoint.opened|closed|disabled|enabled and hookjet.ops.dead_letter.
//   - KV HOOKJET_ATTEMPTS: per (endpoint, message) attempt state, shared by all
//     hookjet processes; written only when an attempt fails.
//   - KV HOOKJET_SEEN: event ids already accepted, shared by all processes.
//   - KV HOOKJET_ENDPOINTS: endpoints created through the admin API, by id
//     ([EndpointStore]; secrets and header values sealed). Disabled states
//     of the first design found there are skipped.
package jetstream

// Package inbound is hookjet's inbound gateway: the receiving side of
// webhooks that payment, source-control and shop providers send. It serves
// POST /in/<source> on its own listener, verifies each request with its
// source's scheme (standard, stripe, github, shopify or a configurable hmac)
// against every secret of the source (so secrets rotate), compares MACs in
// constant time, refuses timestamps outside the source's tolerance and
// bodies over inbound.max_body_bytes, and answers 2xx only once the event is
// stored in JetStream (HOOKJET_INBOUND, through a [Store]) or was stored
// before (a duplicate on the provider's id).
//
// Answers: 200 {"status":"accepted"} or {"status":"duplicate"}; 401 for a
// missing or invalid signature; 400 for a timestamp outside the window; 413
// for a body too large; 404 for an unknown source; 503 when the event cannot
// be stored (the provider retries). A refusal's body names the reason and
// nothing else: never which secret, which part or what was expected.
//
// Every request of a known source is counted in
// hookjet_inbound_requests_total{source,outcome} and in [Gateway.Counts].
//
// The package imports neither NATS nor dispatch: it declares the [Store]
// it needs with its own [Event] and [Stored], and package jetstream's
// InboundStore implements it (stream, bucket, subjects, headers).
package inbound

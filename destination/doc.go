// Package destination is the vocabulary the delivery engine and the places it
// delivers to speak: an [Endpoint] a destination is opened for, the [Request]
// of one attempt, the classified [Result], and the [Destination] interface
// that joins them.
//
// It sits below the engine (package dispatch) and below every
// implementation, the way database/sql/driver sits below database/sql and
// the drivers: the engine holds Destinations and knows none by name; an
// implementation imports this package and nothing of the engine. The HTTP
// webhook (package deliver, its type Webhook) is the first; a broker (NATS, Kafka,
// RabbitMQ) is a package of its own that returns a Destination from an
// [Opener] the server registers under its type.
//
// # What an attempt means
//
// A destination classifies what happened into a [Class], and the engine
// decides from the class alone (with [Result.RetryAfter]) what happens to
// the delivery: acknowledge, retry after a backoff, slow the endpoint down,
// or dead-letter it. A destination never retries, sleeps or queues: one
// Send is one attempt.
//
// This package imports no engine, no broker client and no NATS: `go list
// -deps ./destination` lists only the standard library, package
// signature and package reach (an endpoint's credentials and egress proxy)
// with golang.org/x/oauth2.
package destination

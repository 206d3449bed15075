// Package natsdest is the NATS destination (type "nats"): each attempt
// publishes the event to a subject of another NATS server (or hookjet's
// own, reached by its address like any other), with JetStream by default,
// where the delivery counts once the stream acknowledged it (its
// Nats-Msg-Id, "<endpoint>:<event id>", lets the stream drop a retry it
// already stored), or with core NATS (`"jetstream": false`: at most once).
//
// Connections are shared per address, credentials and guard, dialed through
// the SSRF guard's dialer with the servers a cluster advertises ignored,
// and closed when idle. The package imports the destination vocabulary and
// the NATS client, never the engine. nats.go's jetstream is imported as
// natsjs, as everywhere in hookjet.
package natsdest

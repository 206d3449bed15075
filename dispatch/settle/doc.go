// Package settle is a delivery's stored form and its settlement, below the
// delivery engine (package dispatch).
//
// The stored form: an [Event] as read off HOOKJET_EVENTS or a task, the
// attempt [State] that travels in a task's headers, and the messages that
// carry a delivery (a task, a scheduled retry, a dead letter: [TaskMsg],
// [TaskOf], [DeadLetterMsg]), with the marks that say whose they are
// (the endpoint's incarnation, the tenant).
//
// Settlement: [Decide] maps an attempt's result to an [Action] (a pure
// function over DESIGN's outcomes table, tested without NATS), and the
// settle stage ([Stage]) carries it out: the ledger's mark then the
// source's ack, a retry stored as a schedule, a parked task, a dead
// letter, a held or disabled endpoint, each recorded in the delivery log
// ([Records]). It bounds what waits ([Space]: streams.tasks_max_bytes,
// max_backlog, an endpoint's share), labels the endpoints' series
// ([Series]) and runs the MaxDeliver safety net ([SafetyNet]).
//
// A [Delivery] is the value the engine hands it; its collaborators (the
// ledger, the drains, the endpoints' shared state, the endpoint table) are
// small interfaces declared here. It may import the standard library,
// nats.go, prometheus and hookjet's config, jetstream, destination,
// backoff, attempt and tracing packages; never dispatch, nor another room
// of the delivery path.
package settle

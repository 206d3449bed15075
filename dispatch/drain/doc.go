// Package drain runs hookjet's drains: the deliveries that could not go at
// once wait as tasks in HOOKJET_TASKS, on their endpoint's own subject, and
// a drain of an endpoint is a short-lived durable consumer "drain-<id>" that
// takes them while the endpoint can take deliveries, at most maxDrains at a
// time per process.
//
// The room owns the JetStream side of tasks: the due map (which endpoints
// have tasks, and when to look at each again), the retries this process
// stored as schedules and waits to see come back, the drain consumers
// (made, fetched from, deleted, evicted under maxDrains), the tasks held
// while they are delivered (kept alive with InProgress, acked or naked when
// the engine settles them), the tasks another process had taken when this
// one started, the rescans (quick ones while schedules stored before a
// start may come due) and a disabled endpoint's expiry past retry.max_age.
// The count of HOOKJET_TASKS' bytes that streams.tasks_max_bytes holds
// against is settlement's (package dispatch/settle, TaskBytes).
//
// It speaks to the delivery engine only through [Engine] and [Endpoint],
// declared here and implemented by package dispatch (drain_engine.go):
// admitting a delivery (in-flight slot, rate-limit token, breaker), offering
// it a task to deliver (the engine settles it through a callback), expiring
// a task, counting one consumed. Deciding an attempt's outcome, storing
// tasks, retries and dead letters are settlement's, which the engine runs.
//
// It may import the standard library, nats.go and its jetstream package,
// and hookjet's config and jetstream packages; never dispatch, nor any
// package of the delivery path above it.
package drain

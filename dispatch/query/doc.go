// Package query answers the operator's questions about the delivery engine
// (the admin API's endpoint status, summary, waits and dead letters, the
// readiness probe and the gauges read from JetStream) and replays dead
// letters. It is a room below the engine: it never imports package dispatch.
//
// What it reads:
//   - the engine, through [Source]: per-endpoint facts (the definition in
//     force, disabled and hold state, requests in flight, last delivery,
//     limiter tokens, tasks taken before the process started, the first
//     retry stored, the last test, what waits in the ordered lane) and the
//     process's figures (in flight, the last hour's deliveries), all as
//     value types of this package;
//   - JetStream itself, where the answers live there: task counts per
//     subject in HOOKJET_TASKS, HOOKJET_DLQ, the fan-out consumer's state
//     and HOOKJET_EVENTS;
//   - the breakers, from [breaker.Registry].
//
// What it writes: a replay hands each dead letter to a [Requeuer] (the
// engine turns it into a task: the task format is the engine's) and
// removes it from HOOKJET_DLQ once that is stored; [Queries.RunGauges]
// hands its figures to [GaugeSink].
//
// It may import api, attempt, breaker, config, endpoints, package jetstream
// (hookjet's streams) and nats.go; not dispatch, nor its other rooms.
package query

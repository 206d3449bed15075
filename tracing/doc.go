// Package tracing makes OpenTelemetry spans of hookjet's deliveries: one span
// per delivery attempt, a child of the publisher's W3C traceparent when the
// NATS message carries one, and spans for moves to the dead-letter stream and
// for replays. The request to the endpoint carries the attempt span's
// traceparent on.
//
// [Setup] builds the tracer provider the configuration and the standard
// OTEL_* environment variables ask for (an OTLP exporter), or none: tracing
// is off by default. [New] wraps a provider in a [Tracer]. A nil *Tracer is
// valid and is what the delivery engine holds when tracing is off: every
// method then returns at once and allocates nothing, so an untraced delivery
// costs nothing measurable (BenchmarkAttempt/off).
//
// The package imports no NATS: message headers are passed as a [Header],
// which nats.Header and http.Header convert to without copying.
//
// # Spans
//
//	hookjet.attempt      one HTTP attempt (kind client); attributes
//	                     hookjet.endpoint, hookjet.event.type,
//	                     hookjet.event.id, hookjet.attempt (1-based),
//	                     hookjet.replay, http.response.status_code,
//	                     hookjet.class; status Error unless class is success
//	hookjet.dead_letter  the copy to HOOKJET_DLQ; hookjet.reason,
//	                     hookjet.attempts; its context travels in the dead
//	                     letter's traceparent header
//	hookjet.replay       a dead letter sent again (kind producer); parent is
//	                     the dead letter's traceparent, and the replayed
//	                     message carries the replay span's, so the replay's
//	                     attempts join the original trace
package tracing

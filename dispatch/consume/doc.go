// Package consume is how the fan-out reads HOOKJET_EVENTS and acks it:
// pulls sent as room frees and the events held ahead of the engine's
// workers (Run, the ahead queue, the puller), the byte budgets that bound
// them (Budget), and with nats.url the acks written with a reply subject
// and their answers awaited (AckProof).
//
// It knows JetStream's pull protocol and nothing of deliveries: Run hands
// each event to its Options.Take, which settles it. It imports NATS and the
// standard library only; the engine (package dispatch) imports it.
package consume

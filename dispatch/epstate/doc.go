// Package epstate holds what every hookjet process must know of an
// endpoint beyond its definition: disabled (by a 410 or an operator) or held
// (by a receiver's Retry-After), in the KV bucket HOOKJET_ENDPOINT_STATE,
// with a key only for the endpoints in one of those states. States loads
// them, keeps them current with a watch, changes them with a compare-and-set
// applied at once in the process that writes, and publishes the
// operational events of those changes (hookjet.ops.endpoint.*), telling
// each to the Announcer it is given (package opsevent's events, through
// the engine, which names the endpoint).
//
// The stages read it (Blocked: admission, the drains, the lane) and change
// it (Hold, Disable: settlement); it imports NATS, jetstream's names and the
// standard library, never the engine.
package epstate

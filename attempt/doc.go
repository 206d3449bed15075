// Package attempt holds the delivery log's record: what one attempt to
// deliver an event to an endpoint did, and the dead-lettering, parking and
// expiry that end or pause a delivery. The engine (package dispatch) writes
// records, the admin API and the CLI read them; package jetstream stores
// them in HOOKJET_LOG. It imports nothing of NATS or HTTP.
package attempt

// Package outbox is the transactional outbox: an application writes an event
// in the same PostgreSQL transaction as its business change ([Insert]), and a
// [Relay] moves committed rows into JetStream, so that either both the change
// and the webhook happen or neither does.
//
// The table ([Schema]) has id (text, primary key: it becomes Nats-Msg-Id and
// so the webhook-id), event_type, payload (bytea; jsonb works too), headers
// (jsonb, optional: an object of header names to a string or a list of
// strings), created_at, tenant (text, nullable: the event's tenant, header
// Hookjet-Tenant) and ordering_key (text, nullable: the event's ordering key,
// header Hookjet-Ordering-Key). An insert names only id, event_type and
// payload, and tenant for a tenant's event, ordering_key for a keyed one; a
// statement trigger sends a NOTIFY on the channel named like the table. A
// table created without the tenant or ordering_key column keeps working: its
// events have no tenant, or no key, until the column is added.
//
// The relay claims up to a batch of rows in id order with FOR UPDATE SKIP
// LOCKED (several relays may share a table), publishes them asynchronously
// through a [Publisher], waits for every PubAck, deletes the acknowledged
// rows and commits. It is at-least-once: a crash between the PubAck and the
// commit republishes the rows with the same id, and JetStream's duplicate
// window (and hookjet's dedupe beyond it) absorbs them. A row that can never
// be published (an invalid event type, tenant or key, a payload over the size
// limit, malformed headers) is published as a dead letter with reason "rejected"
// instead and deleted, so one bad row never blocks the rest.
//
// A row is deleted only once its event is on disk: at its PubAck when the
// server fsyncs before acknowledging or replicas confirm the write, else
// ([WithHold]) once the server's sync interval has passed since the PubAck.
//
// This package does not import NATS: package jetstream provides the
// Publisher hookjet uses.
package outbox

// Package routing is the endpoint table: which endpoints are in force in
// this process, where each definition comes from (the config file, the
// admin API, another process's config file), and to which of them an event
// goes (the pattern index: an event type and a tenant to endpoint ids).
//
// Changes come in as data ([Table.ApplyConfig], [Table.PutAPI],
// [Table.RemoveAPI], [Table.PutShared]); the table decides which definition
// wins (the file's over the API's, which it keeps shadowed until the file
// drops the id; this process's over another's) and hands each effective
// change, serialised, to the [Runtime] it was made with: the delivery
// engine's per-endpoint state (in-flight slots, rate limiter, metric
// series) stays in dispatch. The Runtime is the table's watcher: it sees
// every change in force, in order, as it happens. Readers ask [Table.Match]
// (an event type and a tenant to endpoint ids), [Table.Get] and
// [Table.Config]. [Revisions] keeps the admin API's KV revisions
// in force, so a watched change is applied once and never undone by an
// older one.
//
// Why a package of its own and not a type in endpoints: endpoints is the
// stored form of an API endpoint, imported by jetstream's store; the table
// is the engine's view of every endpoint whatever its source, and neither
// needs the other. routing imports neither NATS nor HTTP: the KV watches
// stay in jetstream and dispatch, and feed it.
package routing

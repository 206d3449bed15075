// Package pgdedupe is a [webhook.Store] in PostgreSQL: a processed-id row is
// inserted in the same transaction as the handler's effect, so the effect
// and the mark commit together or not at all. A duplicate is detected by
// INSERT ... ON CONFLICT DO NOTHING inserting no row; a concurrent copy of
// the same id waits on the row lock until the first transaction ends, then
// is a duplicate (committed) or processed (rolled back).
//
// Create the table with [Schema]; delete old rows with [Store.Expire].
package pgdedupe

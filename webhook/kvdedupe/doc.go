// Package kvdedupe is a [webhook.Store] in a NATS JetStream KV bucket, shared
// by every replica of a consumer: an id is claimed with create-if-absent (a
// short lease, in case the replica dies mid-way), marked processed when the
// handler succeeds (kept for the bucket's TTL), and released (deleted) when
// the handler fails, so that the retry is processed.
//
// The bucket needs per-key TTLs (nats-server 2.11 or later); create it with
// [BucketConfig]. Keys are a hash of the id, so any id fits.
package kvdedupe

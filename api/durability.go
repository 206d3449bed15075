package api

// Durability is what hookjet knows of how its streams are stored: the
// servers' sync policy and each stream's replicas.
type Durability struct {
	// Sync is "always" (fsync before the PubAck), a lazy interval such as
	// "2m0s", or "unknown" (not readable: hookjet treats it as lazy).
	Sync string `json:"sync"`
	// Streams are hookjet's streams and KV buckets, by name.
	Streams []StreamDurability `json:"streams,omitempty"`
	// AtRisk names the streams a power cut of one server can take
	// acknowledged messages from: one replica on a lazily (or unknown)
	// syncing server. Streams with persist_mode async are lazy by design
	// and not listed.
	AtRisk []string `json:"at_risk,omitempty"`
}

// StreamDurability is one stream's share of [Durability].
type StreamDurability struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
	// PersistMode is "async" for a stream that flushes asynchronously
	// whatever the server's policy; empty otherwise.
	PersistMode string `json:"persist_mode,omitempty"`
}

// Package eventindex is the event log's list index, kept by each hookjet
// process in its data_dir (event-index.db, bbolt): which events
// HOOKJET_EVENTS holds, newest first, by type, tenant, id prefix and time,
// so that GET /api/v1/events answers a page without reading the stream.
//
// # Why an index of our own
//
// HOOKJET_EVENTS puts every event of a type on one subject
// (hookjet.events.<type>); its tenant, ordering key and id are headers,
// which the server indexes nowhere. Listing "the newest events of tenant
// acme" from the stream alone would read it backwards, message by message,
// until a page is full: a scan that grows with the stream. A subject per
// event (or per tenant and id) would let the server's subject index answer,
// at about 180 bytes of every NATS server's heap per stored event
// (JETSTREAM.md, "Memory per stored message"). So, as for the delivery log
// (package logindex), every process follows HOOKJET_EVENTS with an ordered
// consumer (headers only: payloads never cross the wire for it) and keeps
// on its own disk one summary per event (id, type, tenant, key, published
// time, size, sequence: about 100 bytes) and the keys that find it. The
// index is a cache of the stream: losing it costs a re-read of the
// stream's headers, never an event.
//
// # Layout
//
// Sequences are grouped in generations of [GenSize]. The generation being
// written (the live one) is held in memory as a slice of summaries in
// sequence order (at most GenSize of them: a fixed bound, whatever the
// stream holds); when the first sequence of the next generation arrives
// the live one is sealed: its keys are sorted and appended to a bbolt
// bucket of its own ("g" + generation number, big endian), one sequential
// bulk insert per GenSize events, pages filled to the brim. Queries keep
// being answered from memory while a generation is written. In a
// generation's bucket:
//
//	's' + seq                                  the event's summary
//	't' + type + 0x00 + seq                    by type
//	'n' + tenant + 0x00 + seq                  by tenant (events with one)
//	'c' + tenant + 0x00 + type + 0x00 + seq    by tenant and type
//	'i' + id + 0x00 + seq                      by id (prefix search, lookup)
//
// # What a page costs
//
// A page walks generations newest first from its cursor (a sequence) and,
// in each, the key family that serves its filters backwards: type and
// tenant are served by their own keys, so a page reads about its own
// entries plus one seek per generation it passes. since and until become
// sequence bounds by binary search over the summaries (published times
// grow with sequences). An id prefix is served by the id keys when the
// generation holds at most [PrefixMax] ids with it, and otherwise (a broad
// prefix such as "evt_") by the other keys with the prefix checked on each
// summary. Every page examines at most [ScanBudget] keys: a filter that
// matches little returns a short page and a cursor to go on from, never a
// scan of the index. The cursor is a sequence: events published while a
// client pages have higher ones and never shift or repeat its pages.
//
// # Forgetting
//
// Events leave the stream by streams.max_age, streams.max_bytes and
// hookjet's own trimming of delivered events, always from the front. The
// follower passes the stream's first sequence to [Index.Prune], which
// deletes every generation entirely below it (a bucket at a time), and
// queries take it as a floor ([Query.First]), so an event the stream no
// longer holds is never listed. The meta bucket holds the last sealed
// sequence and the identity (creation time) of the stream indexed: after
// a restart the follower resumes after the last sealed sequence (at most
// one generation is read again); a stream created anew wipes the index.
// The file, its meta bucket and the generations' buckets are package
// internal/genstore's, shared with logindex.
package eventindex

// Package logindex is the delivery log's lookup index, kept by each hookjet
// process in its data_dir (log-index.db, bbolt): which HOOKJET_LOG sequences
// hold an event's records, and which hold an endpoint's.
//
// # Why an index of our own
//
// nats-server keeps an in-memory entry for every distinct subject of a
// stream, for as long as a message on it is retained, on every replica:
// about 180 bytes per message when each message has a subject of its own,
// 10 with shared subjects, 1 after a restart (JETSTREAM.md, "Memory per
// stored message"). The delivery log used to give every record its own
// subject (hookjet.log.<endpoint>.<event>.<n>) so that the server's subject
// index answered "the records of event X"; at the default 8 GiB log (about
// 30 million records) that index alone was several GB of every NATS
// server's heap. Records now share one subject per endpoint
// (hookjet.log.<endpoint>), which costs the server a few bytes per record,
// and the lookups the subject index used to answer are answered here
// instead: every process follows HOOKJET_LOG with an ordered consumer,
// Adds each record's (sequence, event id, endpoint), and a query reads the
// sequences from the index and direct-gets the messages by sequence (a
// direct get by sequence touches one block, whatever the subject).
//
// The index is a cache of the stream: losing it costs a re-read of the log,
// never a record. It stores no record, only sequences (about 40 bytes of
// disk per record for its two keys).
//
// # Layout
//
// Sequences are grouped in generations of [GenSize]. The generation being
// written (the live one) is held in memory (maps by event hash and by
// endpoint); when the first sequence of the next generation arrives the
// live one is sealed: its keys are sorted and appended to a bbolt bucket of
// its own ("g" + generation number, big endian), so a write is one
// sequential bulk insert per GenSize records rather than a random B-tree
// insert per record. In a generation's bucket:
//
//	'e' + fnv64a(event id) + seq   an event's records (a hash collision is
//	                               filtered out by the reader, which reads
//	                               the record's event_id)
//	'p' + endpoint + 0x00 + seq    an endpoint's records
//
// The meta bucket holds the last sealed sequence and the identity (creation
// time) of the stream indexed. After a restart the follower resumes after
// the last sealed sequence: at most one generation is read again. A stream
// created anew (another identity, or fewer messages than indexed) wipes the
// index. Generations entirely below the stream's first sequence (records
// dropped by log.max_age or log.max_bytes) are deleted bucket by bucket
// ([Index.Prune]). The file, its meta bucket and the generations' buckets
// are package internal/genstore's, shared with eventindex; the keys within
// a generation are this package's.
//
// An event's lookup is one seek per generation (about 230 at 30 million
// records) plus the live maps; an endpoint's page walks generations newest
// first with a reverse cursor and stops as soon as it has its records.
package logindex

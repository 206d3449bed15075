// Package genstore is the bbolt file beneath hookjet's stream indexes
// (logindex, eventindex) and the follower's progress through the stream.
//
// It owns what every such index shares: opening the file (a damaged one is
// removed and created anew: the index is a cache of its stream), the meta
// bucket ("sealed": the last sequence in the file, big endian; "stream": the
// identity of the stream indexed), Reset (every bucket but meta deleted),
// the generations (sequences (g<<shift)+1 .. (g+1)<<shift) sealed from
// memory into buckets of their own ("g" + generation number, big endian,
// keys appended in order), Prune (the generations the stream no longer
// holds deleted), and Applied with its waiters. The keys within a
// generation's bucket, what is held in memory and the queries belong to
// each index.
package genstore

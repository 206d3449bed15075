package logindex

import (
	"bytes"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// EventSeqs returns the sequences indexed for event id, ascending. A hash
// collision may add another event's sequences: the caller checks each
// record's event_id.
func (x *Index) EventSeqs(id string) ([]uint64, error) {
	h := EventHash(id)
	x.mu.RLock()
	live := slices.Clone(x.live.events[h])
	x.mu.RUnlock()
	prefix := binary.BigEndian.AppendUint64([]byte{'e'}, h)
	var out []uint64
	err := x.db.View(func(tx *bolt.Tx) error {
		return eachGen(tx, false, func(_ uint64, b *bolt.Bucket) bool {
			c := b.Cursor()
			for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
				out = append(out, binary.BigEndian.Uint64(k[len(prefix):]))
			}
			return true
		})
	})
	if err != nil {
		return nil, err
	}
	out = append(out, live...)
	slices.Sort(out)
	return slices.Compact(out), nil
}

// eachGen calls fn for every sealed generation's bucket, oldest first (or
// newest first with reverse), until fn returns false.
func eachGen(tx *bolt.Tx, reverse bool, fn func(g uint64, b *bolt.Bucket) bool) error {
	c := tx.Cursor()
	var k []byte
	if reverse {
		k, _ = c.Seek([]byte{'h'})
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
	} else {
		k, _ = c.Seek([]byte{'g'})
	}
	for ; len(k) == 9 && k[0] == 'g'; k = step(c, reverse) {
		b := tx.Bucket(k)
		if b == nil {
			continue
		}
		if !fn(binary.BigEndian.Uint64(k[1:]), b) {
			return nil
		}
	}
	return nil
}

func step(c *bolt.Cursor, reverse bool) []byte {
	if reverse {
		k, _ := c.Prev()
		return k
	}
	k, _ := c.Next()
	return k
}

// EndpointSeqs returns up to limit sequences of endpoint's records within
// lo..hi (inclusive), newest first.
func (x *Index) EndpointSeqs(endpoint string, lo, hi uint64, limit int) ([]uint64, error) {
	if limit <= 0 || lo > hi {
		return nil, nil
	}
	var out []uint64
	x.mu.RLock()
	live := x.live.eps[endpoint]
	for i := len(live) - 1; i >= 0 && len(out) < limit; i-- {
		if s := live[i]; s >= lo && s <= hi {
			out = append(out, s)
		} else if s < lo {
			break
		}
	}
	liveNum := x.live.num
	x.mu.RUnlock()
	if len(out) == limit {
		return out, nil
	}
	prefix := endpointPrefix(endpoint)
	err := x.db.View(func(tx *bolt.Tx) error {
		return eachGen(tx, true, func(g uint64, b *bolt.Bucket) bool {
			if g >= liveNum || g<<GenShift+1 > hi {
				return true // the live generation's (answered above), or above hi
			}
			if genEnd(g) < lo {
				return false
			}
			out = endpointIn(b, prefix, lo, hi, limit, out)
			return len(out) < limit
		})
	})
	return out, err
}

// endpointIn appends to out, newest first, the sequences in lo..hi under
// prefix in b, until out holds limit.
func endpointIn(b *bolt.Bucket, prefix []byte, lo, hi uint64, limit int, out []uint64) []uint64 {
	c := b.Cursor()
	k, _ := c.Seek(binary.BigEndian.AppendUint64(slices.Clone(prefix), hi+1))
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	for ; k != nil && bytes.HasPrefix(k, prefix) && len(out) < limit; k, _ = c.Prev() {
		s := binary.BigEndian.Uint64(k[len(prefix):])
		if s < lo {
			break
		}
		if s <= hi {
			out = append(out, s)
		}
	}
	return out
}

package logindex

import (
	"bytes"
	"encoding/binary"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/hookjet/hookjet/internal/genstore"
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
	err := x.f.EachGen(false, func(_ uint64, b *bolt.Bucket) bool {
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			out = append(out, binary.BigEndian.Uint64(k[len(prefix):]))
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	out = append(out, live...)
	slices.Sort(out)
	return slices.Compact(out), nil
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
	err := x.f.EachGen(true, func(g uint64, b *bolt.Bucket) bool {
		if g >= liveNum || x.f.Start(g) > hi {
			return true // the live generation's (answered above), or above hi
		}
		if x.f.End(g) < lo {
			return false
		}
		out = endpointIn(b, prefix, lo, hi, limit, out)
		return len(out) < limit
	})
	return out, err
}

// endpointIn appends to out, newest first, the sequences in lo..hi under
// prefix in b, until out holds limit.
func endpointIn(b *bolt.Bucket, prefix []byte, lo, hi uint64, limit int, out []uint64) []uint64 {
	c := b.Cursor()
	k, _ := genstore.Before(c, binary.BigEndian.AppendUint64(slices.Clone(prefix), hi+1))
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

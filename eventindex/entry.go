package eventindex

import (
	"encoding/binary"
	"errors"
	"time"
)

// entryVersion is the first byte of a stored summary.
const entryVersion = 1

var errEntry = errors.New("event index: unreadable summary")

// encode is e's stored summary (its sequence is the key's): a version
// byte, the published time (unix nanoseconds), the size and the four
// strings, each length-prefixed.
func encode(e *Entry) []byte {
	b := make([]byte, 0, 1+8+binary.MaxVarintLen64+len(e.ID)+len(e.Type)+len(e.Tenant)+len(e.Key)+8)
	b = append(b, entryVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(e.PublishedAt.UnixNano()))
	b = binary.AppendUvarint(b, uint64(e.Size))
	for _, s := range []string{e.ID, e.Type, e.Tenant, e.Key} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// decode reads a stored summary of the event at seq.
func decode(seq uint64, b []byte) (Entry, error) {
	if len(b) < 9 || b[0] != entryVersion {
		return Entry{}, errEntry
	}
	e := Entry{Seq: seq, PublishedAt: time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9]))).UTC()}
	b = b[9:]
	size, n := binary.Uvarint(b)
	if n <= 0 {
		return Entry{}, errEntry
	}
	e.Size, b = int(size), b[n:]
	for _, s := range []*string{&e.ID, &e.Type, &e.Tenant, &e.Key} {
		l, n := binary.Uvarint(b)
		if n <= 0 || uint64(len(b)-n) < l {
			return Entry{}, errEntry
		}
		*s, b = string(b[n:n+int(l)]), b[n+int(l):]
	}
	return e, nil
}

// publishedAt reads only the published time of a stored summary.
func publishedAt(b []byte) (time.Time, bool) {
	if len(b) < 9 || b[0] != entryVersion {
		return time.Time{}, false
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(b[1:9]))), true
}

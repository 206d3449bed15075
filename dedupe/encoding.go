package dedupe

import (
	"encoding/binary"
	"fmt"
	"time"
)

var (
	seenBucket      = []byte("dedupe_seen")
	deliveredBucket = []byte("dedupe_delivered")
	expiryBucket    = []byte("dedupe_expiry")
)

const (
	// MaxIDLen is the longest endpoint or event id the ledger accepts, in
	// bytes.
	MaxIDLen = 4096

	// entryVersion is the first byte of every value this build writes.
	entryVersion = 1

	seenLen      = 1 + 8 + 8 // version, sequence, unix nanoseconds
	deliveredLen = 1 + 8     // version, unix nanoseconds

	// Kinds of entry in the expiry index.
	kindSeen      byte = 's'
	kindDelivered byte = 'd'
)

func checkID(what, id string) error {
	if id == "" || len(id) > MaxIDLen {
		return fmt.Errorf("%s of %d bytes, want 1 to %d: %w", what, len(id), MaxIDLen, ErrInvalidID)
	}
	return nil
}

// appendDeliveredKey appends the key of (endpoint, eventID): the endpoint's
// length as a uvarint, the endpoint, then the event id. The length prefix
// keeps any pair of strings unambiguous.
func appendDeliveredKey(dst []byte, endpoint, eventID string) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(endpoint)))
	dst = append(dst, endpoint...)
	return append(dst, eventID...)
}

func encodeSeen(seq uint64, at time.Time) []byte {
	v := make([]byte, 0, seenLen)
	v = append(v, entryVersion)
	v = binary.BigEndian.AppendUint64(v, seq)
	return binary.BigEndian.AppendUint64(v, uint64(at.UnixNano()))
}

func decodeSeen(v []byte) (seq uint64, atNanos int64, err error) {
	if len(v) != seenLen || v[0] != entryVersion {
		return 0, 0, fmt.Errorf("seen entry of %d bytes: %w", len(v), errMalformed)
	}
	return binary.BigEndian.Uint64(v[1:9]), int64(binary.BigEndian.Uint64(v[9:])), nil
}

func encodeDelivered(at time.Time) []byte {
	v := make([]byte, 0, deliveredLen)
	v = append(v, entryVersion)
	return binary.BigEndian.AppendUint64(v, uint64(at.UnixNano()))
}

func decodeDelivered(v []byte) (atNanos int64, err error) {
	if len(v) != deliveredLen || v[0] != entryVersion {
		return 0, fmt.Errorf("delivered entry of %d bytes: %w", len(v), errMalformed)
	}
	return int64(binary.BigEndian.Uint64(v[1:])), nil
}

// decodeAt returns the time stored in an entry of the given kind.
func decodeAt(kind byte, v []byte) (int64, error) {
	if kind == kindSeen {
		_, at, err := decodeSeen(v)
		return at, err
	}
	return decodeDelivered(v)
}

// indexKey returns the expiry index key of an entry: unix nanoseconds
// (big-endian, so keys sort by time), the kind, then the entry's key.
func indexKey(atNanos int64, kind byte, key []byte) []byte {
	k := make([]byte, 0, 9+len(key))
	k = binary.BigEndian.AppendUint64(k, uint64(atNanos))
	k = append(k, kind)
	return append(k, key...)
}

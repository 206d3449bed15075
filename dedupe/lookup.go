package dedupe

import (
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Sequence returns the event log sequence under which eventID was first
// accepted, when the ledger still remembers it (within its ttl). The admin
// API uses it to find an event in the event log by id.
func (l *Ledger) Sequence(eventID string) (seq uint64, found bool, err error) {
	seq, _, found, err = l.lookupSeen(eventID)
	return seq, found, err
}

// Seen returns the sequence under which eventID was first recorded when
// the ledger remembers it within its ttl, a record still queued included.
// Unlike FirstSeen it records nothing.
func (l *Ledger) Seen(eventID string) (seq uint64, found bool, err error) {
	if err := checkID("event id", eventID); err != nil {
		return 0, false, err
	}
	now := l.now()
	l.mu.Lock()
	pending, ok := l.pendingSeen[eventID]
	l.mu.Unlock()
	if ok && l.live(pending.atNanos, now) {
		return pending.seq, true, nil
	}
	seq, atNanos, found, err := l.lookupSeen(eventID)
	if err != nil || !found || !l.live(atNanos, now) {
		return 0, false, err
	}
	return seq, true, nil
}

// positionsBucket holds named positions: how far a follower of a stream
// has applied it into the ledger, and which stream that was (Position,
// SetPosition).
var positionsBucket = []byte("dedupe_positions")

// Position returns the position stored under name, 0 when there is none.
func (l *Ledger) Position(name string) (uint64, error) {
	pos, _, err := l.StreamPosition(name)
	return pos, err
}

// StreamPosition returns the position stored under name and the creation
// time of the stream it was reached in (zero when there is no position, or
// it was stored without one by an earlier version).
func (l *Ledger) StreamPosition(name string) (pos uint64, created time.Time, err error) {
	err = l.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(positionsBucket)
		if b == nil {
			return nil
		}
		v := b.Get([]byte(name))
		if len(v) != 8 && len(v) != 16 {
			return nil
		}
		pos = binary.BigEndian.Uint64(v)
		if len(v) == 16 {
			if n := int64(binary.BigEndian.Uint64(v[8:])); n != 0 {
				created = time.Unix(0, n).UTC()
			}
		}
		return nil
	})
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("read dedupe ledger: %w", err)
	}
	return pos, created, nil
}

// SetPosition stores pos under name, reached in the stream created at
// created (zero: unknown), in a transaction of its own. A follower stores
// a position only once the records it applied up to there are committed
// (FirstSeen's records are, within WithBatch's delay).
func (l *Ledger) SetPosition(name string, pos uint64, created time.Time) error {
	var n int64
	if !created.IsZero() {
		n = created.UnixNano()
	}
	err := l.db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(positionsBucket)
		if err != nil {
			return err
		}
		v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), pos)
		return b.Put([]byte(name), binary.BigEndian.AppendUint64(v, uint64(n)))
	})
	if err != nil {
		return fmt.Errorf("write dedupe ledger: %w", err)
	}
	return nil
}

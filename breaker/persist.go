package breaker

import (
	"encoding/json"
	"fmt"
	"time"
)

// bucketName is the bbolt bucket holding one record per endpoint id.
var bucketName = []byte("breaker")

// recordVersion is the version of record this build writes and reads.
const recordVersion = 1

// record is the persisted state of one endpoint.
type record struct {
	V                   int           `json:"v"`
	State               State         `json:"state"` // 0 closed, 1 half-open, 2 open
	ConsecutiveFailures int           `json:"consecutive_failures"`
	Cooldown            time.Duration `json:"cooldown"` // nanoseconds
	OpenedAt            time.Time     `json:"opened_at,omitzero"`
	OpenUntil           time.Time     `json:"open_until,omitzero"`
	LastSuccess         time.Time     `json:"last_success,omitzero"`
	LastFailure         time.Time     `json:"last_failure,omitzero"`
	Slots               []slotRecord  `json:"slots,omitempty"`
}

// slotRecord is one hour of latency samples.
type slotRecord struct {
	Hour           int64       `json:"hour"` // hours since the Unix epoch
	FirstAttempts  uint32      `json:"first_attempts,omitempty"`
	FirstSuccesses uint32      `json:"first_successes,omitempty"`
	Buckets        [][2]uint32 `json:"buckets"` // [bucket index, count] for non-empty buckets
}

// decodeRecord parses a persisted record and checks its version.
func decodeRecord(data []byte) (record, error) {
	var rec record
	if err := json.Unmarshal(data, &rec); err != nil {
		return record{}, fmt.Errorf("decode breaker record: %w", err)
	}
	if rec.V != recordVersion {
		return record{}, fmt.Errorf("breaker record version %d: %w", rec.V, errVersion)
	}
	return rec, nil
}

// snapshot returns e's persisted form. The caller holds e.mu.
func (e *endpoint) snapshot() record {
	rec := record{
		V:                   recordVersion,
		State:               e.state,
		ConsecutiveFailures: e.consecutive,
		Cooldown:            e.cooldown,
		OpenedAt:            e.openedAt,
		OpenUntil:           e.openUntil,
		LastSuccess:         e.lastSuccess,
		LastFailure:         e.lastFailure,
	}
	for i := range windowHours {
		if e.win.h == nil {
			break
		}
		s := &e.win.h.slots[i]
		if s.count == 0 {
			continue
		}
		sr := slotRecord{Hour: s.hour, FirstAttempts: s.firstAttempts, FirstSuccesses: s.firstSuccesses}
		for b, n := range s.buckets {
			if n > 0 {
				sr.Buckets = append(sr.Buckets, [2]uint32{uint32(b), n})
			}
		}
		rec.Slots = append(rec.Slots, sr)
	}
	return rec
}

// restore loads rec into e, which is new, dropping slots that have left the
// window by now and ignoring out-of-range data. The caller holds e.mu or
// owns e exclusively.
func (e *endpoint) restore(rec record, now time.Time) {
	e.state = rec.State
	if e.state != Closed && e.state != HalfOpen && e.state != Open {
		e.state = Closed
	}
	e.consecutive = max(rec.ConsecutiveFailures, 0)
	if rec.Cooldown > 0 {
		e.cooldown = rec.Cooldown
	}
	e.openedAt, e.openUntil = rec.OpenedAt, rec.OpenUntil
	e.lastSuccess, e.lastFailure = rec.LastSuccess, rec.LastFailure

	w := &e.win
	nowHour := hourOf(now)
	w.newest = nowHour
	for _, sr := range rec.Slots {
		if sr.Hour <= nowHour-windowHours || sr.Hour > nowHour {
			continue // expired, or from a clock that ran ahead
		}
		s := &w.ensure().slots[slotIndex(sr.Hour)]
		if s.count > 0 {
			if s.hour >= sr.Hour {
				continue
			}
			w.drop(s)
		}
		s.hour = sr.Hour
		for _, bn := range sr.Buckets {
			b, n := int(bn[0]), bn[1]
			if b >= numBuckets || n == 0 {
				continue
			}
			if s.buckets == nil {
				s.buckets = new([numBuckets]uint32)
			}
			s.buckets[b] += n
			s.count += n
			w.h.total[b] += uint64(n)
			w.count += uint64(n)
		}
		if s.count == 0 {
			continue
		}
		s.firstAttempts = min(sr.FirstAttempts, s.count)
		s.firstSuccesses = min(sr.FirstSuccesses, s.firstAttempts)
		w.firstAttempts += uint64(s.firstAttempts)
		w.firstSuccesses += uint64(s.firstSuccesses)
	}
}

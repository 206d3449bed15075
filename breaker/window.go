package breaker

import (
	"math"
	"time"
)

// Histogram layout. Changing it changes the meaning of persisted bucket
// indexes, so it requires a new record version.
const (
	minLatency  = 100 * time.Microsecond
	maxLatency  = 120 * time.Second
	logBuckets  = 100
	numBuckets  = logBuckets + 2 // plus underflow (0) and overflow (last)
	windowHours = 24
)

var (
	// logGrowth is the natural log of the ratio between bucket bounds.
	logGrowth = math.Log(float64(maxLatency)/float64(minLatency)) / logBuckets
	// bucketValues holds the value each bucket reports: the geometric
	// middle of its bounds, or the range limit for under- and overflow.
	bucketValues = func() (v [numBuckets]time.Duration) {
		v[0] = minLatency
		for i := 1; i <= logBuckets; i++ {
			mid := float64(minLatency) * math.Exp((float64(i-1)+0.5)*logGrowth)
			v[i] = time.Duration(mid)
		}
		v[numBuckets-1] = maxLatency
		return v
	}()
)

// bucketOf returns the histogram bucket holding d.
func bucketOf(d time.Duration) int {
	switch {
	case d < minLatency:
		return 0
	case d >= maxLatency:
		return numBuckets - 1
	}
	i := int(math.Log(float64(d)/float64(minLatency)) / logGrowth)
	return min(max(i, 0), logBuckets-1) + 1
}

// hourOf returns the hour since the Unix epoch that t falls in.
func hourOf(t time.Time) int64 {
	s := t.Unix()
	h := s / 3600
	if s < 0 && s%3600 != 0 {
		h--
	}
	return h
}

// slotIndex returns the ring position of hour.
func slotIndex(hour int64) int {
	return int((hour%windowHours + windowHours) % windowHours)
}

// slot is one hour of samples.
type slot struct {
	hour           int64 // hour since the epoch; meaningful while count > 0
	count          uint32
	firstAttempts  uint32
	firstSuccesses uint32
	buckets        *[numBuckets]uint32 // allocated on first use, then reused
}

// window is a rolling 24-hour latency histogram. It keeps a running total of
// the live slots so that percentiles do not merge slots on every read.
type window struct {
	h              *histograms // nil until the first sample: an idle endpoint costs a few words
	count          uint64
	firstAttempts  uint64
	firstSuccesses uint64
	newest         int64 // latest hour seen; the clock never moves it back
}

// histograms are a window's per-hour slots and their running total.
type histograms struct {
	slots [windowHours]slot
	total [numBuckets]uint64
}

// ensure allocates the histograms.
func (w *window) ensure() *histograms {
	if w.h == nil {
		w.h = new(histograms)
	}
	return w.h
}

// advance drops the slots that are 24 hours or more older than hour.
func (w *window) advance(hour int64) {
	if hour <= w.newest {
		return
	}
	w.newest = hour
	if w.h == nil {
		return
	}
	for i := range w.h.slots {
		if s := &w.h.slots[i]; s.count > 0 && s.hour <= hour-windowHours {
			w.drop(s)
		}
	}
}

// drop removes s from the totals and empties it.
func (w *window) drop(s *slot) {
	for b, n := range s.buckets {
		w.h.total[b] -= uint64(n)
	}
	w.count -= uint64(s.count)
	w.firstAttempts -= uint64(s.firstAttempts)
	w.firstSuccesses -= uint64(s.firstSuccesses)
	clear(s.buckets[:])
	s.count, s.firstAttempts, s.firstSuccesses = 0, 0, 0
}

// add records one sample in bucket b at hour. A sample from an hour before
// the newest one seen (the clock went back) counts in the newest hour.
func (w *window) add(hour int64, b int, first, success bool) {
	w.advance(hour)
	hour = w.newest
	s := &w.ensure().slots[slotIndex(hour)]
	if s.count > 0 && s.hour != hour {
		w.drop(s) // unreachable after advance; keeps the totals honest
	}
	s.hour = hour
	if s.buckets == nil {
		s.buckets = new([numBuckets]uint32)
	}
	s.buckets[b]++
	s.count++
	w.h.total[b]++
	w.count++
	if first {
		s.firstAttempts++
		w.firstAttempts++
		if success {
			s.firstSuccesses++
			w.firstSuccesses++
		}
	}
}

// quantile returns the q-quantile (0 < q <= 1) of the live samples by the
// nearest-rank method, or 0 without samples.
func (w *window) quantile(q float64) time.Duration {
	if w.count == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(w.count)))
	rank = min(max(rank, 1), w.count)
	var seen uint64
	for b, n := range w.h.total {
		seen += n
		if seen >= rank {
			return bucketValues[b]
		}
	}
	return bucketValues[numBuckets-1]
}

package settle

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// OtherSeries is the endpoint label of every endpoint past
// metrics.max_endpoint_series.
const OtherSeries = "_other"

// Counters are the per-endpoint series the delivery path counts into
// (dispatch.Metrics's), and how to delete an endpoint's.
type Counters struct {
	Attempts        *prometheus.CounterVec   // endpoint, class
	FirstAttempts   *prometheus.CounterVec   // endpoint, class
	AttemptDuration *prometheus.HistogramVec // endpoint
	DeadLetters     *prometheus.CounterVec   // endpoint, reason
	Deferrals       *prometheus.CounterVec   // endpoint, cause
	Filtered        *prometheus.CounterVec   // endpoint
	FilterErrors    *prometheus.CounterVec   // endpoint
	// Forget deletes every series of an endpoint label; nil: nothing.
	Forget func(label string)
}

// Series hands out endpoint label values: an endpoint's own id for the
// first max endpoints that need one, "_other" for the rest, so cardinality
// stays bounded with 100,000 endpoints while the admin API keeps every
// detail.
type Series struct {
	c   Counters
	max int

	mu     sync.Mutex
	labels map[string]string
	own    int
}

// NewSeries hands out at most max endpoint labels of their own and counts
// into c.
func NewSeries(c Counters, max int) *Series {
	return &Series{c: c, max: max, labels: map[string]string{}}
}

// Label returns the endpoint label for id.
func (s *Series) Label(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.labels[id]; ok {
		return l
	}
	l := OtherSeries
	if s.own < s.max {
		l = id
		s.own++
	}
	s.labels[id] = l
	return l
}

// Owned calls fn with the label of every endpoint that has series of its
// own (at most metrics.max_endpoint_series), without giving any new ones.
func (s *Series) Owned(fn func(label string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.labels {
		if l != OtherSeries {
			fn(l)
		}
	}
}

// Forget deletes the series of a removed endpoint and frees its place.
func (s *Series) Forget(id string) {
	s.mu.Lock()
	l, ok := s.labels[id]
	delete(s.labels, id)
	if ok && l == id {
		s.own--
	}
	s.mu.Unlock()
	if ok && l == id && s.c.Forget != nil {
		s.c.Forget(id)
	}
}

// CountDeferral counts a delivery of e put back without an attempt, by
// cause.
func (s *Series) CountDeferral(e *Endpoint, cause string) {
	if e.Removed.Load() {
		return
	}
	s.c.Deferrals.WithLabelValues(s.Label(e.ID), cause).Inc()
}

// CountDeadLetter counts a dead letter of endpoint id, by reason.
func (s *Series) CountDeadLetter(id, reason string) {
	s.c.DeadLetters.WithLabelValues(s.Label(id), reason).Inc()
}

// ObserveAttempt counts an attempt of e by class (first: its delivery's
// first), and its duration when timed.
func (s *Series) ObserveAttempt(e *Endpoint, class string, first bool, seconds float64, timed bool) {
	if e.Removed.Load() {
		return // a removed endpoint's series do not come back from late results
	}
	l := s.Label(e.ID)
	s.c.Attempts.With(prometheus.Labels{"endpoint": l, "class": class}).Inc()
	if first {
		s.c.FirstAttempts.With(prometheus.Labels{"endpoint": l, "class": class}).Inc()
	}
	if timed {
		s.c.AttemptDuration.WithLabelValues(l).Observe(seconds)
	}
}

// CountFiltered counts an event e's filter refused (failed: its evaluation
// failed, which is no match too).
func (s *Series) CountFiltered(e *Endpoint, failed bool) {
	if e.Removed.Load() {
		return
	}
	l := s.Label(e.ID)
	s.c.Filtered.WithLabelValues(l).Inc()
	if failed {
		s.c.FilterErrors.WithLabelValues(l).Inc()
	}
}

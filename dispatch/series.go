package dispatch

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/config"
)

// otherSeries is the endpoint label of every endpoint past
// metrics.max_endpoint_series.
const otherSeries = "_other"

// series hands out endpoint label values: an endpoint's own id for the first
// max endpoints that need one, "_other" for the rest, so cardinality stays
// bounded with 100,000 endpoints while the admin API keeps every detail.
type series struct {
	m   *Metrics
	max int

	mu     sync.Mutex
	labels map[string]string
	own    int
}

func maxSeries(cfg *config.Config) int {
	if cfg.Metrics.MaxEndpointSeries > 0 {
		return cfg.Metrics.MaxEndpointSeries
	}
	return 1000
}

func newSeries(m *Metrics, max int) *series {
	return &series{m: m, max: max, labels: map[string]string{}}
}

// label returns the endpoint label for id.
func (s *series) label(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.labels[id]; ok {
		return l
	}
	l := otherSeries
	if s.own < s.max {
		l = id
		s.own++
	}
	s.labels[id] = l
	return l
}

// owned calls fn with the label of every endpoint that has series of its
// own (at most metrics.max_endpoint_series), without giving any new ones.
func (s *series) owned(fn func(label string)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.labels {
		if l != otherSeries {
			fn(l)
		}
	}
}

// forget deletes the series of a removed endpoint and frees its place.
func (s *series) forget(id string) {
	s.mu.Lock()
	l, ok := s.labels[id]
	delete(s.labels, id)
	if ok && l == id {
		s.own--
	}
	s.mu.Unlock()
	if ok && l == id {
		s.m.forget(id)
	}
}

// The per-endpoint counters, looked up through the label.
func (s *series) countDeferral(e *endpoint, cause string) {
	if e.removed.Load() {
		return
	}
	s.m.Deferrals.WithLabelValues(s.label(e.id), cause).Inc()
}

func (s *series) countDeadLetter(id, reason string) {
	s.m.DeadLetters.WithLabelValues(s.label(id), reason).Inc()
}

func (s *series) observeAttempt(e *endpoint, class string, first bool, seconds float64, timed bool) {
	if e.removed.Load() {
		return // a removed endpoint's series do not come back from late results
	}
	l := s.label(e.id)
	m := s.m
	m.Attempts.With(prometheus.Labels{"endpoint": l, "class": class}).Inc()
	if first {
		m.FirstAttempts.With(prometheus.Labels{"endpoint": l, "class": class}).Inc()
	}
	if timed {
		m.AttemptDuration.WithLabelValues(l).Observe(seconds)
	}
}

// countDeferral counts a deferral of e's delivery (the drains' and the
// lane's call; settlement counts through its series).
func (d *Dispatcher) countDeferral(e *endpoint, cause string) { d.series.countDeferral(e, cause) }

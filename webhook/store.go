package webhook

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Store is a dedupe store that several replicas of a consumer share, so that
// an at-least-once delivery (a webhook retried by its sender, a JetStream
// message redelivered) causes its effect once whichever replica gets it.
// Implementations: webhook/kvdedupe (NATS KV) and webhook/pgdedupe
// (PostgreSQL, the mark in the effect's transaction).
type Store interface {
	// Once runs fn for id unless id was processed before, and reports a
	// duplicate without running fn. id is remembered only when fn
	// succeeds: when fn fails the error is returned and id is released,
	// so that the retry is processed. ErrInProgress means another replica
	// holds id right now; retry later.
	Once(ctx context.Context, id string, fn func(ctx context.Context) error) (duplicate bool, err error)
}

// ErrInProgress is returned by a [Store] when another replica is processing
// the same id at this moment: leave the message for a later retry (for
// example NakWithDelay) instead of acknowledging it.
var ErrInProgress = errors.New("webhook: id is being processed by another replica")

// DedupeMetrics counts what [Counted] stores decided:
// hookjet_webhook_dedupe_total{store,outcome} with outcome processed,
// duplicate, failed (fn or the store failed) or in_progress. The duplicate
// rate is duplicate / (processed + duplicate).
type DedupeMetrics struct {
	total *prometheus.CounterVec
}

// NewDedupeMetrics registers the counters with reg (nil: not registered).
func NewDedupeMetrics(reg prometheus.Registerer) *DedupeMetrics {
	m := &DedupeMetrics{total: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookjet_webhook_dedupe_total",
		Help: "Messages a consumer's dedupe store saw, by store and outcome (processed, duplicate, failed, in_progress).",
	}, []string{"store", "outcome"})}
	if reg != nil {
		reg.MustRegister(m.total)
	}
	return m
}

// Counted returns s counting each Once in m under the label store="name".
func Counted(s Store, m *DedupeMetrics, name string) Store {
	c := &counted{Store: s}
	for i, o := range []string{"processed", "duplicate", "failed", "in_progress"} {
		c.c[i] = m.total.WithLabelValues(name, o)
	}
	return c
}

type counted struct {
	Store
	c [4]prometheus.Counter
}

func (c *counted) Once(ctx context.Context, id string, fn func(ctx context.Context) error) (bool, error) {
	dup, err := c.Store.Once(ctx, id, fn)
	switch {
	case errors.Is(err, ErrInProgress):
		c.c[3].Inc()
	case err != nil:
		c.c[2].Inc()
	case dup:
		c.c[1].Inc()
	default:
		c.c[0].Inc()
	}
	return dup, err
}

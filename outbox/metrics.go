package outbox

import "github.com/prometheus/client_golang/prometheus"

// metrics are the relay's Prometheus series.
type metrics struct {
	relayed    prometheus.Counter
	rejected   prometheus.Counter
	duplicates prometheus.Counter
	lag        prometheus.Gauge
	batch      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		relayed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookjet_outbox_relayed_total",
			Help: "Outbox rows published to HOOKJET_EVENTS (PubAck received) and deleted.",
		}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookjet_outbox_rejected_total",
			Help: "Outbox rows dead-lettered as rejected (hookjet.dlq._outbox) and deleted.",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookjet_outbox_duplicates_total",
			Help: "Outbox rows JetStream already had (republished after a crash, absorbed by the duplicate window).",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookjet_outbox_lag_seconds",
			Help: "Age of the oldest row in the outbox table (0 when empty).",
		}),
		batch: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hookjet_outbox_batch_duration_seconds",
			Help:    "Time to claim, publish (until every PubAck), delete and commit one batch of outbox rows.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}),
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.relayed, m.rejected, m.duplicates, m.lag, m.batch} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

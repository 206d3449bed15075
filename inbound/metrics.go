package inbound

import "github.com/prometheus/client_golang/prometheus"

// Metrics are the gateway's Prometheus metrics.
type Metrics struct {
	requests *prometheus.CounterVec
}

// NewMetrics registers hookjet_inbound_requests_total{source,outcome} with
// reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{requests: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "hookjet_inbound_requests_total",
		Help: "Requests to the inbound gateway by source and outcome (accepted, duplicate, missing_signature, invalid_signature, outside_window, too_large, unavailable).",
	}, []string{"source", "outcome"})}
	if reg != nil {
		reg.MustRegister(m.requests)
	}
	return m
}

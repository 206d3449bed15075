package dispatch

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/attempt"
)

// Metrics are hookjet's Prometheus series. Endpoint labels take the ids of at
// most metrics.max_endpoint_series endpoints; the rest share "_other".
type Metrics struct {
	Attempts        *prometheus.CounterVec   // endpoint, class
	AttemptDuration *prometheus.HistogramVec // endpoint
	FirstAttempts   *prometheus.CounterVec   // endpoint, class
	DeadLetters     *prometheus.CounterVec   // endpoint, reason
	Deferrals       *prometheus.CounterVec   // endpoint, cause
	Filtered        *prometheus.CounterVec   // endpoint
	FilterErrors    *prometheus.CounterVec   // endpoint
	InvalidEvents   *prometheus.CounterVec   // type
	BreakerState    *prometheus.GaugeVec     // endpoint
	Pending         *prometheus.GaugeVec     // endpoint
	OldestPending   prometheus.Gauge
	Duplicates      *prometheus.CounterVec // stage
	Published       prometheus.Counter
	MissingID       prometheus.Counter
	DLQMessages     prometheus.Gauge
	LatencyP95      *prometheus.GaugeVec // endpoint
	InFlight        prometheus.Gauge
	Endpoints       *prometheus.GaugeVec // state: enabled, disabled, breaker_open
	SafetyNetErrors prometheus.Counter
	Trimmed         prometheus.Counter
	OrderingHeld    *prometheus.GaugeVec // endpoint
	// Destination is 1 for each endpoint with series of its own, labelled
	// with its destination type (webhook, nats, kafka, rabbitmq): joined on
	// endpoint, it breaks every per-endpoint series down by destination
	// without another label on each.
	Destination *prometheus.GaugeVec // endpoint, destination
}

// NewMetrics creates hookjet's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_attempts_total", Help: "Delivery attempts by endpoint and outcome class.",
		}, []string{"endpoint", "class"}),
		AttemptDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "hookjet_attempt_duration_seconds",
			Help:    "Duration of delivery attempts, from sending the request to reading the capped response.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 15, 30},
		}, []string{"endpoint"}),
		FirstAttempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_first_attempts_total", Help: "First delivery attempts by endpoint and outcome class.",
		}, []string{"endpoint", "class"}),
		DeadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_dead_letters_total", Help: "Messages moved to HOOKJET_DLQ by endpoint and reason.",
		}, []string{"endpoint", "reason"}),
		Deferrals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_deferrals_total", Help: "Messages put back without an attempt, by endpoint and cause.",
		}, []string{"endpoint", "cause"}),
		Filtered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_filtered_total", Help: "Events an endpoint's patterns matched and its filter refused (no delivery, no record), by endpoint; evaluation errors included.",
		}, []string{"endpoint"}),
		FilterErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_filter_errors_total", Help: "Evaluations of an endpoint's filter that failed (a missing field, a type mismatch, a cost limit, the event's budget): each is no match, by endpoint.",
		}, []string{"endpoint"}),
		InvalidEvents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_invalid_events_total", Help: "Events whose payload fails their type's schema (or whose type is not in the catalogue under catalog.strict), by event type, counted once per event that matched an endpoint: delivered under catalog.validate warn, dead-lettered as invalid under enforce.",
		}, []string{"type"}),
		BreakerState: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookjet_breaker_state", Help: "Circuit breaker state per endpoint: 0 closed, 1 half-open, 2 open.",
		}, []string{"endpoint"}),
		Pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookjet_pending", Help: "Messages waiting for the endpoint, including those awaiting a retry.",
		}, []string{"endpoint"}),
		OldestPending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookjet_oldest_pending_age_seconds", Help: "Age of the oldest message not yet delivered or dead-lettered.",
		}),
		Duplicates: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hookjet_duplicates_total", Help: "Duplicates suppressed, by stage (publish, ledger, delivered).",
		}, []string{"stage"}),
		Published: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookjet_events_published_total", Help: "Messages hookjet itself published (replays, CLI).",
		}),
		MissingID: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookjet_events_without_id_total", Help: "Events published without Nats-Msg-Id; their id was derived from the stream sequence.",
		}),
		DLQMessages: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookjet_dlq_messages", Help: "Messages currently in HOOKJET_DLQ.",
		}),
		LatencyP95: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookjet_latency_p95_seconds", Help: "Rolling 24h p95 attempt latency per endpoint (this process).",
		}, []string{"endpoint"}),
		InFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hookjet_in_flight", Help: "Requests in flight in this process.",
		}),
		Endpoints: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookjet_endpoints", Help: "Endpoints by state: enabled, disabled, breaker_open (this process's breakers).",
		}, []string{"state"}),
		SafetyNetErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookjet_safety_net_errors_total", Help: "MaxDeliver advisories whose message was already gone: a delivery that may have been lost.",
		}),
		OrderingHeld: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookjet_ordering_keys_held", Help: "Ordering keys of an endpoint with ordering: key whose next delivery waits on an earlier one (retrying, dead letter held, endpoint not admitting); reported by the process that delivers the ordered lane.",
		}, []string{"endpoint"}),
		Destination: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hookjet_endpoint_destination", Help: "1 for each endpoint with series of its own, by its destination type (webhook, nats, kafka, rabbitmq): join on endpoint to break the per-endpoint series down by destination.",
		}, []string{"endpoint", "destination"}),
		Trimmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hookjet_events_trimmed_total", Help: "Delivered events removed from HOOKJET_EVENTS because it passed 90% of streams.max_bytes.",
		}),
	}
	reg.MustRegister(m.Trimmed, m.Endpoints, m.SafetyNetErrors, m.Attempts, m.AttemptDuration, m.FirstAttempts, m.DeadLetters, m.Deferrals, m.Filtered, m.FilterErrors, m.InvalidEvents,
		m.BreakerState, m.Pending, m.OldestPending, m.Duplicates, m.Published, m.MissingID,
		m.DLQMessages, m.LatencyP95, m.InFlight, m.OrderingHeld, m.Destination)
	return m
}

// forget removes the series of an endpoint that is no longer configured.
func (m *Metrics) forget(id string) {
	l := prometheus.Labels{"endpoint": id}
	m.Attempts.DeletePartialMatch(l)
	m.AttemptDuration.DeletePartialMatch(l)
	m.FirstAttempts.DeletePartialMatch(l)
	m.DeadLetters.DeletePartialMatch(l)
	m.Deferrals.DeletePartialMatch(l)
	m.Filtered.DeletePartialMatch(l)
	m.FilterErrors.DeletePartialMatch(l)
	m.BreakerState.DeletePartialMatch(l)
	m.Pending.DeletePartialMatch(l)
	m.LatencyP95.DeletePartialMatch(l)
	m.OrderingHeld.DeletePartialMatch(l)
	m.Destination.DeletePartialMatch(l)
}

// setDestination labels an endpoint that has series of its own with its
// destination type, replacing the type it had.
func (m *Metrics) setDestination(label, typ string) {
	m.Destination.DeletePartialMatch(prometheus.Labels{"endpoint": label})
	m.Destination.WithLabelValues(label, typ).Set(1)
}

// zero creates the counters of an endpoint that has series of its own at
// 0, so that they exist from the start (and after a restart) rather than
// from its first attempt: rate() and alerts see a 0, not a missing series.
func (m *Metrics) zero(label string) {
	for _, c := range []string{attempt.ClassSuccess, attempt.ClassTransient, attempt.ClassRateLimited, attempt.ClassPermanent, attempt.ClassGone} {
		m.Attempts.WithLabelValues(label, c)
		m.FirstAttempts.WithLabelValues(label, c)
	}
	for _, r := range []string{"permanent", "exhausted", "expired", "gone", "rejected", "overflow", "auth", "transform", "invalid"} {
		m.DeadLetters.WithLabelValues(label, r)
	}
	for _, c := range []string{"breaker", "rate_limit", "in_flight"} {
		m.Deferrals.WithLabelValues(label, c)
	}
}

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Summary is the answer of GET /api/v1/summary.
type Summary struct {
	Pending                 uint64  `json:"pending"`
	AwaitingRetry           uint64  `json:"awaiting_retry"`
	InFlight                int64   `json:"in_flight"`
	DeadLetter              uint64  `json:"dead_letter"`
	DeliveredLastHour       int64   `json:"delivered_last_hour"`
	FailedLastHour          int64   `json:"failed_last_hour"`
	OldestPendingAgeSeconds float64 `json:"oldest_pending_age_seconds"`
	Endpoints               int     `json:"endpoints"`
	DisabledEndpoints       int     `json:"disabled_endpoints"`
	OpenBreakers            int     `json:"open_breakers"`
	EventsStored            uint64  `json:"events_stored"`
	EventsBytes             uint64  `json:"events_bytes"`
}

// BreakerStatus is an endpoint's circuit breaker as the admin API shows it.
type BreakerStatus struct {
	State               string     `json:"state"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	CooldownSeconds     float64    `json:"cooldown_seconds"`
	OpenedAt            *time.Time `json:"opened_at"`
	OpenUntil           *time.Time `json:"open_until,omitempty"`
}

// Latency holds rolling 24h percentiles in milliseconds.
type Latency struct {
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	Samples int64   `json:"samples"`
}

// EndpointStatus is one endpoint as the admin API shows it. Secrets and header
// values are never part of it; header names are.
type EndpointStatus struct {
	ID                      string        `json:"id"`
	URL                     string        `json:"url"`
	Events                  []string      `json:"events"`
	Disabled                bool          `json:"disabled"`
	DisabledReason          string        `json:"disabled_reason,omitempty"`
	Breaker                 BreakerStatus `json:"breaker"`
	LatencyMS               Latency       `json:"latency_ms"`
	FirstAttemptSuccessRate float64       `json:"first_attempt_success_rate"`
	Pending                 uint64        `json:"pending"`
	AwaitingRetry           uint64        `json:"awaiting_retry"`
	DeadLetters             uint64        `json:"dead_letters"`
	ConsecutiveFailures     int           `json:"consecutive_failures"`
	LastSuccess             *time.Time    `json:"last_success,omitempty"`
	LastFailure             *time.Time    `json:"last_failure,omitempty"`
	HeaderNames             []string      `json:"header_names,omitempty"`
	Secrets                 int           `json:"secrets"`
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

// Endpoints returns the status of every configured endpoint, ordered by id.
func (d *Dispatcher) Endpoints(ctx context.Context) ([]EndpointStatus, error) {
	d.mu.Lock()
	ids := make([]string, 0, len(d.workers))
	for id := range d.workers {
		ids = append(ids, id)
	}
	d.mu.Unlock()
	sort.Strings(ids)
	dlq, err := d.dlqCounts(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]EndpointStatus, 0, len(ids))
	for _, id := range ids {
		s, err := d.endpoint(ctx, id, dlq)
		if errors.Is(err, ErrUnknownEndpoint) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// Endpoint returns one endpoint's status or ErrUnknownEndpoint.
func (d *Dispatcher) Endpoint(ctx context.Context, id string) (EndpointStatus, error) {
	dlq, err := d.dlqCounts(ctx)
	if err != nil {
		return EndpointStatus{}, err
	}
	return d.endpoint(ctx, id, dlq)
}

func (d *Dispatcher) endpoint(ctx context.Context, id string, dlq map[string]uint64) (EndpointStatus, error) {
	d.mu.Lock()
	w, ok := d.workers[id]
	reason, disabled := d.disabled[id]
	d.mu.Unlock()
	if !ok {
		return EndpointStatus{}, fmt.Errorf("%w: %q", ErrUnknownEndpoint, id)
	}
	ep := w.ep
	s := EndpointStatus{
		ID: ep.ID, URL: ep.URL, Events: ep.Events, Disabled: disabled, DisabledReason: reason,
		DeadLetters: dlq[id], Secrets: len(ep.Secrets),
	}
	for k := range ep.Headers {
		s.HeaderNames = append(s.HeaderNames, k)
	}
	sort.Strings(s.HeaderNames)
	if h, ok := d.o.Breakers.Health(id); ok {
		s.Breaker = BreakerStatus{
			State:               h.State.String(),
			ConsecutiveFailures: h.ConsecutiveFailures,
			CooldownSeconds:     h.Cooldown.Seconds(),
			OpenedAt:            timePtr(h.OpenedAt),
			OpenUntil:           timePtr(h.OpenUntil),
		}
		s.LatencyMS = Latency{P50: ms(h.P50), P95: ms(h.P95), P99: ms(h.P99), Samples: h.Samples}
		s.FirstAttemptSuccessRate = h.FirstAttemptSuccessRate
		s.ConsecutiveFailures = h.ConsecutiveFailures
		s.LastSuccess = timePtr(h.LastSuccess)
		s.LastFailure = timePtr(h.LastFailure)
	} else {
		s.Breaker.State = "closed"
	}
	info, err := w.cons.Info(ctx)
	if err != nil {
		return EndpointStatus{}, fmt.Errorf("consumer info %s: %w", ConsumerName(id), err)
	}
	s.Pending = info.NumPending + uint64(info.NumAckPending)
	s.AwaitingRetry = uint64(info.NumAckPending)
	return s, nil
}

// dlqCounts counts dead letters per endpoint from the DLQ's subject totals.
func (d *Dispatcher) dlqCounts(ctx context.Context) (map[string]uint64, error) {
	st, err := d.o.JS.Stream(ctx, DLQStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", DLQStream, err)
	}
	info, err := st.Info(ctx, natsjs.WithSubjectFilter(DLQPrefix+">"))
	if err != nil {
		return nil, fmt.Errorf("stream info %s: %w", DLQStream, err)
	}
	out := make(map[string]uint64, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		out[subj[len(DLQPrefix):]] = n
	}
	return out, nil
}

// Summary computes the summary from consumer and stream state and this
// process's counters.
func (d *Dispatcher) Summary(ctx context.Context) (Summary, error) {
	d.mu.Lock()
	workers := make([]*worker, 0, len(d.workers))
	for _, w := range d.workers {
		workers = append(workers, w)
	}
	disabled := len(d.disabled)
	d.mu.Unlock()
	s := Summary{InFlight: d.inFlightN.Load(), Endpoints: len(workers), DisabledEndpoints: disabled}
	events, err := d.o.JS.Stream(ctx, EventsStream)
	if err != nil {
		return Summary{}, fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	var oldest time.Time
	var ackPending uint64
	for _, w := range workers {
		info, err := w.cons.Info(ctx)
		if err != nil {
			return Summary{}, fmt.Errorf("consumer info %s: %w", ConsumerName(w.ep.ID), err)
		}
		d.o.Metrics.Pending.WithLabelValues(w.ep.ID).Set(float64(info.NumPending + uint64(info.NumAckPending)))
		s.Pending += info.NumPending + uint64(info.NumAckPending)
		ackPending += uint64(info.NumAckPending)
		if info.NumPending+uint64(info.NumAckPending) > 0 {
			if t, ok := oldestFrom(ctx, events, info.AckFloor.Stream+1); ok && (oldest.IsZero() || t.Before(oldest)) {
				oldest = t
			}
		}
		if h, ok := d.o.Breakers.Health(w.ep.ID); ok {
			d.o.Metrics.BreakerState.WithLabelValues(w.ep.ID).Set(float64(h.State))
			d.o.Metrics.LatencyP95.WithLabelValues(w.ep.ID).Set(h.P95.Seconds())
			if h.State.String() != "closed" {
				s.OpenBreakers++
			}
		}
	}
	if n := uint64(max(s.InFlight, 0)); ackPending > n {
		s.AwaitingRetry = ackPending - n
	}
	if !oldest.IsZero() {
		s.OldestPendingAgeSeconds = math.Max(0, d.now().Sub(oldest).Seconds())
	}
	d.o.Metrics.OldestPending.Set(s.OldestPendingAgeSeconds)
	dlq, err := d.o.JS.Stream(ctx, DLQStream)
	if err != nil {
		return Summary{}, fmt.Errorf("stream %s: %w", DLQStream, err)
	}
	di, err := dlq.Info(ctx)
	if err != nil {
		return Summary{}, fmt.Errorf("stream info %s: %w", DLQStream, err)
	}
	s.DeadLetter = di.State.Msgs
	d.o.Metrics.DLQMessages.Set(float64(di.State.Msgs))
	ei, err := events.Info(ctx)
	if err != nil {
		return Summary{}, fmt.Errorf("stream info %s: %w", EventsStream, err)
	}
	s.EventsStored, s.EventsBytes = ei.State.Msgs, ei.State.Bytes
	s.DeliveredLastHour, s.FailedLastHour = d.hour.sum(d.now())
	return s, nil
}

// oldestFrom returns the publish time of the first stored event at or after
// seq: the oldest message an endpoint has not acked. Interest retention keeps
// only messages some consumer still needs, so this is exact for the first
// endpoint's floor and an upper bound on age otherwise.
func oldestFrom(ctx context.Context, events natsjs.Stream, seq uint64) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := events.GetMsg(ctx, seq, natsjs.WithGetMsgSubject(">"))
	if err != nil {
		return time.Time{}, false
	}
	return m.Time, true
}

// RunGauges refreshes the gauges that come from JetStream state every
// interval until ctx is done. The caller owns the goroutine.
func (d *Dispatcher) RunGauges(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if _, err := d.Summary(ctx); err != nil && ctx.Err() == nil {
			d.log.Debug("refresh gauges", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Ready reports whether NATS is connected and hookjet's streams exist.
func (d *Dispatcher) Ready(ctx context.Context) error {
	if !d.o.NC.IsConnected() {
		return errors.New("nats not connected")
	}
	for _, name := range []string{EventsStream, DLQStream} {
		if _, err := d.o.JS.Stream(ctx, name); err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	return nil
}

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/jetstream"
	"math"
	"sort"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	u := t.UTC()
	return &u
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/float64(time.Microsecond)) / 1000 }

// InForce is the number of endpoints in force in this process: the config
// file's, the admin API's and those other processes share from their files.
func (d *Dispatcher) InForce() int { return d.table.Len() }

// Endpoints returns the status of every endpoint, ordered by id.
func (d *Dispatcher) Endpoints(ctx context.Context) ([]api.EndpointStatus, error) {
	out, _, err := d.EndpointPage(ctx, "", "", 0)
	return out, err
}

// EndpointPage returns up to limit endpoints (0: all) with ids after after,
// of tenant when it is not empty, ordered by id, and the cursor of the next
// page ("" after the last). Waiting counts come from two stream lookups per
// page, whatever its size.
func (d *Dispatcher) EndpointPage(ctx context.Context, tenant, after string, limit int) ([]api.EndpointStatus, string, error) {
	ids := d.table.IDs()
	i := sort.SearchStrings(ids, after)
	if i < len(ids) && ids[i] == after {
		i++
	}
	var page []*endpoint
	next := ""
	for ; i < len(ids); i++ {
		e := d.endpoint(ids[i])
		if e == nil || (tenant != "" && e.set.Load().ep.Tenant != tenant) {
			continue
		}
		if limit > 0 && len(page) == limit {
			next = page[len(page)-1].id
			break
		}
		page = append(page, e)
	}
	w, err := d.waiting(ctx, "*")
	if err != nil {
		return nil, "", err
	}
	dlq, err := d.dlqCounts(ctx, "*")
	if err != nil {
		return nil, "", err
	}
	pageIDs := make([]string, len(page))
	for i, e := range page {
		pageIDs[i] = e.id
	}
	if err := d.ownCounts(ctx, pageIDs, dlq); err != nil { // dispatch/deadletters.go
		return nil, "", err
	}
	lane := d.laneViews(ctx, pageIDs) // ordering: key (dispatch/ordering_view.go)
	out := make([]api.EndpointStatus, 0, len(page))
	for _, e := range page {
		out = append(out, d.status(e, w[e.id], dlq[e.id], lane[e.id]))
	}
	return out, next, nil
}

// Endpoint returns one endpoint's status or api.ErrUnknownEndpoint.
func (d *Dispatcher) Endpoint(ctx context.Context, id string) (api.EndpointStatus, error) {
	e := d.endpoint(id)
	if e == nil {
		return api.EndpointStatus{}, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	w, err := d.waiting(ctx, id)
	if err != nil {
		return api.EndpointStatus{}, err
	}
	dlq, err := d.dlqCounts(ctx, id)
	if err != nil {
		return api.EndpointStatus{}, err
	}
	if err := d.ownCounts(ctx, []string{id}, dlq); err != nil {
		return api.EndpointStatus{}, err
	}
	return d.status(e, w[id], dlq[id], d.laneViews(ctx, []string{id})[id]), nil
}

// status is e's status: w its tasks, lane what waits for it in the
// ordered lane.
func (d *Dispatcher) status(e *endpoint, w waitingCount, deadLetters uint64, lane laneView) api.EndpointStatus {
	ep := e.set.Load().ep
	st := d.state(e.id)
	s := api.EndpointStatus{
		ID: ep.ID, URL: ep.URL, Events: ep.Events, Disabled: st.Disabled, DisabledReason: st.Reason,
		DeadLetters: deadLetters, Secrets: len(ep.Secrets), Source: ep.Source, Tenant: ep.Tenant,
		Description: ep.Description, CreatedAt: timePtr(ep.CreatedAt), UpdatedAt: timePtr(ep.UpdatedAt),
		Pending: w.due + w.scheduled + lane.Waiting, AwaitingRetry: w.scheduled + lane.Retrying, InFlight: e.slots.inUse(),
		LastDelivery: e.last.Load(),
	}
	d.logStatus(&s, *ep) // owner, settings, last_test: dispatch/record.go
	if st.HoldUntil.After(d.now()) {
		s.HeldUntil = timePtr(st.HoldUntil)
	}
	for k := range ep.Headers {
		s.HeaderNames = append(s.HeaderNames, k)
	}
	sort.Strings(s.HeaderNames)
	if h, ok := d.o.Breakers.Health(e.id); ok {
		s.Breaker = api.BreakerStatus{
			State:               h.State.String(),
			ConsecutiveFailures: h.ConsecutiveFailures,
			CooldownSeconds:     h.Cooldown.Seconds(),
			OpenedAt:            timePtr(h.OpenedAt),
			OpenUntil:           timePtr(h.OpenUntil),
		}
		s.LatencyMS = api.Latency{P50: ms(h.P50), P95: ms(h.P95), P99: ms(h.P99), Samples: h.Samples}
		s.FirstAttemptSuccessRate = h.FirstAttemptSuccessRate
		s.ConsecutiveFailures = h.ConsecutiveFailures
		s.LastSuccess = timePtr(h.LastSuccess)
		s.LastFailure = timePtr(h.LastFailure)
	} else {
		s.Breaker.State = "closed"
	}
	// Why deliveries wait (dispatch/waiting.go), retries waiting for
	// their time included.
	now := d.now()
	f := d.waitFacts(e, now, true, lane.Held)
	f.Retries, f.NextRetry = w.scheduled+lane.Retrying, d.drains.FirstRetry(e.id)
	s.Waiting = api.Waits(e.id, f, now)
	s.NextRetry = timePtr(f.NextRetry)
	s.HeldKeys = lane.Held
	return s
}

// waitingCount is what waits for one endpoint in HOOKJET_TASKS.
type waitingCount struct {
	due       uint64 // tasks on hookjet.tasks.<id>: parked or due
	scheduled uint64 // retries waiting for their time
}

// waiting counts the tasks of endpoint id ("*": every endpoint) from the
// stream's per-subject totals: two lookups, not one per endpoint.
func (d *Dispatcher) waiting(ctx context.Context, id string) (map[string]waitingCount, error) {
	st, err := d.o.JS.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", jetstream.TasksStream, err)
	}
	out := map[string]waitingCount{}
	due, err := st.Info(ctx, natsjs.WithSubjectFilter(jetstream.TasksPrefix+id))
	if err != nil {
		return nil, fmt.Errorf("stream info %s: %w", jetstream.TasksStream, err)
	}
	for subj, n := range due.State.Subjects {
		ep := strings.TrimPrefix(subj, jetstream.TasksPrefix)
		w := out[ep]
		w.due += n
		out[ep] = w
	}
	if id == "*" {
		// Listing every scheduled retry's subject costs the server one
		// entry per waiting retry: across endpoints, take this process's
		// count of the tasks it stored instead (see bounds.go).
		d.mu.RLock()
		for ep, e := range d.eps {
			w := out[ep]
			if b := uint64(max(0, e.backlog.Load())); b > w.due {
				w.scheduled = b - w.due
				out[ep] = w
			}
		}
		d.mu.RUnlock()
		return out, nil
	}
	sched, err := st.Info(ctx, natsjs.WithSubjectFilter(jetstream.SchedPrefix+id+".*"))
	if err != nil {
		return nil, fmt.Errorf("stream info %s: %w", jetstream.TasksStream, err)
	}
	for subj, n := range sched.State.Subjects {
		ep, _, _ := strings.Cut(strings.TrimPrefix(subj, jetstream.SchedPrefix), ".")
		w := out[ep]
		w.scheduled += n
		out[ep] = w
	}
	return out, nil
}

// dlqCounts counts dead letters per endpoint from the DLQ's subject totals.
func (d *Dispatcher) dlqCounts(ctx context.Context, id string) (map[string]uint64, error) {
	st, err := d.o.JS.Stream(ctx, jetstream.DLQStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", jetstream.DLQStream, err)
	}
	info, err := st.Info(ctx, natsjs.WithSubjectFilter(jetstream.DLQPrefix+id))
	if err != nil {
		return nil, fmt.Errorf("stream info %s: %w", jetstream.DLQStream, err)
	}
	out := make(map[string]uint64, len(info.State.Subjects))
	for subj, n := range info.State.Subjects {
		out[subj[len(jetstream.DLQPrefix):]] = n
	}
	return out, nil
}

// api.Summary computes the summary from stream and consumer state (a fixed
// number of lookups, whatever the number of endpoints) and this process's
// counters. It changes nothing: RunGauges sets the gauges.
func (d *Dispatcher) Summary(ctx context.Context) (api.Summary, error) {
	s, _, err := d.summary(ctx)
	return s, err
}

// summary is Summary and what waits in the ordered lane, per endpoint.
func (d *Dispatcher) summary(ctx context.Context) (api.Summary, map[string]laneView, error) {
	d.mu.RLock()
	s := api.Summary{InFlight: d.gate.inFlightN.Load(), Endpoints: len(d.eps)}
	for _, st := range d.states {
		if st.Disabled {
			s.DisabledEndpoints++
		}
	}
	d.mu.RUnlock()
	_, halfOpen, open := d.o.Breakers.States()
	s.OpenBreakers = halfOpen + open
	var errs []error
	oldest := time.Time{}
	if c, err := d.o.JS.Consumer(ctx, jetstream.EventsStream, jetstream.FanoutConsumer); err != nil {
		errs = append(errs, fmt.Errorf("consumer %s: %w", jetstream.FanoutConsumer, err))
	} else if info, err := c.Info(ctx); err != nil {
		errs = append(errs, fmt.Errorf("consumer info %s: %w", jetstream.FanoutConsumer, err))
	} else {
		d.fan.floor.Store(info.AckFloor.Stream)
		s.Pending += info.NumPending + uint64(info.NumAckPending)
		if s.Pending > 0 {
			if t, ok := d.firstTime(ctx, jetstream.EventsStream, info.AckFloor.Stream+1); ok {
				oldest = t
			}
		}
	}
	if st, err := d.o.JS.Stream(ctx, jetstream.TasksStream); err != nil {
		errs = append(errs, fmt.Errorf("stream %s: %w", jetstream.TasksStream, err))
	} else if info, err := st.Info(ctx); err != nil {
		errs = append(errs, fmt.Errorf("stream info %s: %w", jetstream.TasksStream, err))
	} else {
		s.Pending += info.State.Msgs
		// Scheduled retries are the tasks that are not yet due: one
		// subject per endpoint is listed, not one per retry.
		if due, err := st.Info(ctx, natsjs.WithSubjectFilter(jetstream.TasksPrefix+"*")); err == nil {
			var n uint64
			for _, c := range due.State.Subjects {
				n += c
			}
			s.AwaitingRetry = info.State.Msgs - min(n, info.State.Msgs)
		}
		if info.State.Msgs > 0 {
			if t, ok := d.firstTime(ctx, jetstream.TasksStream, info.State.FirstSeq); ok && (oldest.IsZero() || t.Before(oldest)) {
				oldest = t
			}
		}
	}
	// The ordered lane's deliveries, as its owner counts them (hold
	// markers and settled entries not yet removed are not deliveries).
	lane := d.laneViews(ctx, nil)
	for _, v := range lane {
		s.Pending += v.Waiting
		s.AwaitingRetry += v.Retrying
		if !v.Oldest.IsZero() && (oldest.IsZero() || v.Oldest.Before(oldest)) {
			oldest = v.Oldest
		}
	}
	if !oldest.IsZero() {
		s.OldestPendingAgeSeconds = math.Max(0, d.now().Sub(oldest).Seconds())
	}
	if st, err := d.o.JS.Stream(ctx, jetstream.DLQStream); err != nil {
		errs = append(errs, fmt.Errorf("stream %s: %w", jetstream.DLQStream, err))
	} else {
		s.DeadLetter = st.CachedInfo().State.Msgs
	}
	if st, err := d.o.JS.Stream(ctx, jetstream.EventsStream); err != nil {
		errs = append(errs, fmt.Errorf("stream %s: %w", jetstream.EventsStream, err))
	} else {
		state := st.CachedInfo().State
		s.EventsStored, s.EventsBytes = state.Msgs, state.Bytes
		if state.Msgs > 0 && !state.FirstTime.IsZero() {
			s.LogOldest = timePtr(state.FirstTime)
		}
	}
	s.DeliveredLastHour, s.FailedLastHour = d.hour.sum(d.now())
	if len(errs) == len([]string{"fanout", "tasks", "dlq", "events"}) {
		return api.Summary{}, nil, errors.Join(errs...)
	}
	for _, err := range errs {
		s.Errors = append(s.Errors, err.Error())
	}
	return s, lane, nil
}

// firstTime returns the publish time of the first message at or after seq
// in stream: the oldest not yet settled.
func (d *Dispatcher) firstTime(ctx context.Context, stream string, seq uint64) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(ctx, stream)
	if err != nil {
		return time.Time{}, false
	}
	m, err := st.GetMsg(ctx, seq, natsjs.WithGetMsgSubject(">"))
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
		d.refreshGauges(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Dispatcher) refreshGauges(ctx context.Context) {
	m := d.o.Metrics
	s, lane, err := d.summary(ctx)
	if err != nil {
		d.log.Debug("refresh gauges", "err", err)
		return
	}
	m.OldestPending.Set(s.OldestPendingAgeSeconds)
	m.DLQMessages.Set(float64(s.DeadLetter))
	w, err := d.waiting(ctx, "*")
	if err == nil {
		// Every labelled endpoint has a series, 0 when nothing waits.
		m.Pending.Reset()
		d.series.owned(func(l string) { m.Pending.WithLabelValues(l).Set(0) })
		other := 0.0
		for id, v := range lane {
			c := w[id]
			c.due += v.Waiting // the ordered lane's count as waiting
			w[id] = c
		}
		for id, c := range w {
			if d.endpoint(id) == nil {
				continue
			}
			if l := d.series.label(id); l == otherSeries {
				other += float64(c.due + c.scheduled)
			} else {
				m.Pending.WithLabelValues(l).Set(float64(c.due + c.scheduled))
			}
		}
		if other > 0 {
			m.Pending.WithLabelValues(otherSeries).Set(other)
		}
	}
	_, _, open := d.o.Breakers.States()
	d.mu.RLock()
	disabled := 0
	for id, st := range d.states {
		if st.Disabled && d.eps[id] != nil {
			disabled++
		}
	}
	enabled := len(d.eps) - disabled
	d.mu.RUnlock()
	m.Endpoints.WithLabelValues("enabled").Set(float64(enabled))
	m.Endpoints.WithLabelValues("disabled").Set(float64(disabled))
	m.Endpoints.WithLabelValues("breaker_open").Set(float64(open))
}

// Ready reports whether NATS is connected, hookjet's streams exist and the
// state file answers.
func (d *Dispatcher) Ready(ctx context.Context) error {
	if !d.o.NC.IsConnected() {
		return errors.New("nats not connected")
	}
	if err := d.o.Ledger.Check(); err != nil {
		return err
	}
	for _, name := range []string{jetstream.EventsStream, jetstream.TasksStream, jetstream.DLQStream} {
		if _, err := d.o.JS.Stream(ctx, name); err != nil {
			return fmt.Errorf("stream %s: %w", name, err)
		}
	}
	return nil
}

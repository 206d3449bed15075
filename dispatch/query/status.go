package query

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/breaker"
	"github.com/hookjet/hookjet/endpoints"
	"github.com/hookjet/hookjet/jetstream"
)

// Endpoints returns the status of every endpoint, ordered by id.
func (q *Queries) Endpoints(ctx context.Context) ([]api.EndpointStatus, error) {
	out, _, err := q.EndpointPage(ctx, "", "", 0)
	return out, err
}

// EndpointPage returns up to limit endpoints (0: all) with ids after after,
// of tenant when it is not empty, ordered by id, and the cursor of the next
// page ("" after the last). Waiting counts come from two stream lookups per
// page, whatever its size.
func (q *Queries) EndpointPage(ctx context.Context, tenant, after string, limit int) ([]api.EndpointStatus, string, error) {
	now := q.now()
	ids := q.src.IDs()
	i := sort.SearchStrings(ids, after)
	if i < len(ids) && ids[i] == after {
		i++
	}
	var pageIDs []string
	next := ""
	for ; i < len(ids); i++ {
		o, ok := q.src.Owner(ids[i]) // its tenant, without the rest of its facts
		if !ok || (tenant != "" && o.Tenant != tenant) {
			continue
		}
		if limit > 0 && len(pageIDs) == limit {
			next = pageIDs[len(pageIDs)-1]
			break
		}
		pageIDs = append(pageIDs, ids[i])
	}
	page := make([]Endpoint, 0, len(pageIDs))
	for _, id := range pageIDs {
		if e, ok := q.src.Endpoint(id, now); ok {
			page = append(page, e)
		}
	}
	w, err := q.waiting(ctx, "*")
	if err != nil {
		return nil, "", err
	}
	dlq, err := q.dlqCounts(ctx, "*")
	if err != nil {
		return nil, "", err
	}
	if err := q.ownCounts(ctx, pageIDs, dlq); err != nil { // deadletters.go
		return nil, "", err
	}
	lane := q.src.Lane(ctx, pageIDs) // ordering: key
	out := make([]api.EndpointStatus, 0, len(page))
	for _, e := range page {
		out = append(out, q.status(e, w[e.Config.ID], dlq[e.Config.ID], lane[e.Config.ID]))
	}
	return out, next, nil
}

// Endpoint returns one endpoint's status or api.ErrUnknownEndpoint.
func (q *Queries) Endpoint(ctx context.Context, id string) (api.EndpointStatus, error) {
	e, ok := q.src.Endpoint(id, q.now())
	if !ok {
		return api.EndpointStatus{}, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	w, err := q.waiting(ctx, id)
	if err != nil {
		return api.EndpointStatus{}, err
	}
	dlq, err := q.dlqCounts(ctx, id)
	if err != nil {
		return api.EndpointStatus{}, err
	}
	if err := q.ownCounts(ctx, []string{id}, dlq); err != nil {
		return api.EndpointStatus{}, err
	}
	return q.status(e, w[id], dlq[id], q.src.Lane(ctx, []string{id})[id]), nil
}

// status is e's status: w its tasks, lane what waits for it in the
// ordered lane.
func (q *Queries) status(e Endpoint, w waitingCount, deadLetters uint64, lane LaneView) api.EndpointStatus {
	id := e.Config.ID
	h, ok := q.breakers.Health(id)
	var last *attempt.Record
	if r, ok := q.src.LastTest(id); ok {
		last = &r
	}
	return statusOf(statusFacts{
		Endpoint: e, Tasks: w, DeadLetters: deadLetters, Lane: lane,
		Breaker: h, HasBreaker: ok, FirstRetry: q.src.FirstRetry(id), LastTest: last,
	}, q.now())
}

// statusFacts is everything an endpoint's status is made of.
type statusFacts struct {
	Endpoint
	Tasks       waitingCount // in HOOKJET_TASKS
	DeadLetters uint64       // its own (deadletters.go)
	Lane        LaneView     // in the ordered lane
	Breaker     breaker.Health
	HasBreaker  bool // false: no breaker configured yet (it reads closed)
	FirstRetry  time.Time
	LastTest    *attempt.Record // nil: no test sent by this process
}

// statusOf assembles an endpoint's status from f at now.
func statusOf(f statusFacts, now time.Time) api.EndpointStatus {
	ep, w, lane := f.Config, f.Tasks, f.Lane
	s := api.EndpointStatus{
		ID: ep.ID, URL: ep.URL, Events: ep.Events, Disabled: f.Disabled, DisabledReason: f.DisabledReason,
		DeadLetters: f.DeadLetters, Secrets: len(ep.Secrets), Source: ep.Source, Tenant: ep.Tenant,
		Description: ep.Description, CreatedAt: timePtr(ep.CreatedAt), UpdatedAt: timePtr(ep.UpdatedAt),
		Pending: w.due + w.scheduled + lane.Waiting, AwaitingRetry: w.scheduled + lane.Retrying, InFlight: f.InFlight,
		LastDelivery: f.LastDelivery,
	}
	// The endpoint object's owner, effective settings and last test.
	s.Owner, s.Settings, s.Filter, s.Transform = ep.Owner, endpoints.SettingsOf(*ep, now), ep.Filter, ep.Transform
	if f.LastTest != nil {
		s.LastTest = api.LastTestOf(*f.LastTest)
	}
	if f.HoldUntil.After(now) {
		s.HeldUntil = timePtr(f.HoldUntil)
	}
	for k := range ep.Headers {
		s.HeaderNames = append(s.HeaderNames, k)
	}
	sort.Strings(s.HeaderNames)
	if h := f.Breaker; f.HasBreaker {
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
	// Why deliveries wait (waiting.go), retries waiting for their time
	// included.
	wf := waitFacts(f.Endpoint, f.Breaker, f.HasBreaker, lane.Held)
	wf.Retries, wf.NextRetry = w.scheduled+lane.Retrying, f.FirstRetry
	s.Waiting = api.Waits(ep.ID, wf, now)
	s.NextRetry = timePtr(wf.NextRetry)
	s.HeldKeys = lane.Held
	return s
}

// waitingCount is what waits for one endpoint in HOOKJET_TASKS.
type waitingCount struct {
	due       uint64 // tasks on hookjet.tasks.<id>: parked or due
	scheduled uint64 // retries waiting for their time
}

// Tasks counts the tasks waiting for endpoint id in HOOKJET_TASKS, due and
// scheduled retries.
func (q *Queries) Tasks(ctx context.Context, id string) (uint64, error) {
	w, err := q.waiting(ctx, id)
	if err != nil {
		return 0, err
	}
	return w[id].due + w[id].scheduled, nil
}

// waiting counts the tasks of endpoint id ("*": every endpoint) from the
// stream's per-subject totals: two lookups, not one per endpoint.
func (q *Queries) waiting(ctx context.Context, id string) (map[string]waitingCount, error) {
	st, err := q.js.Stream(ctx, jetstream.TasksStream)
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
		// count of the tasks it stored instead.
		q.src.Backlogs(func(ep string, tasks int64) {
			w := out[ep]
			if b := uint64(max(0, tasks)); b > w.due {
				w.scheduled = b - w.due
				out[ep] = w
			}
		})
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
func (q *Queries) dlqCounts(ctx context.Context, id string) (map[string]uint64, error) {
	st, err := q.js.Stream(ctx, jetstream.DLQStream)
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

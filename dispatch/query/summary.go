package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/jetstream"
)

// Summary computes the summary from stream and consumer state (a fixed
// number of lookups, whatever the number of endpoints) and this process's
// counters. It changes nothing: RunGauges sets the gauges.
func (q *Queries) Summary(ctx context.Context) (api.Summary, error) {
	s, _, err := q.summary(ctx)
	return s, err
}

// summary is Summary and what waits in the ordered lane, per endpoint.
func (q *Queries) summary(ctx context.Context) (api.Summary, map[string]LaneView, error) {
	p := q.src.Process(q.now())
	s := api.Summary{InFlight: p.InFlight, Endpoints: p.Endpoints, DisabledEndpoints: p.Disabled}
	_, halfOpen, open := q.breakers.States()
	s.OpenBreakers = halfOpen + open
	var errs []error
	oldest := time.Time{}
	if c, err := q.js.Consumer(ctx, jetstream.EventsStream, jetstream.FanoutConsumer); err != nil {
		errs = append(errs, fmt.Errorf("consumer %s: %w", jetstream.FanoutConsumer, err))
	} else if info, err := c.Info(ctx); err != nil {
		errs = append(errs, fmt.Errorf("consumer info %s: %w", jetstream.FanoutConsumer, err))
	} else {
		q.src.NoteAckFloor(info.AckFloor.Stream)
		s.Pending += info.NumPending + uint64(info.NumAckPending)
		if s.Pending > 0 {
			if t, ok := q.firstTime(ctx, jetstream.EventsStream, info.AckFloor.Stream+1); ok {
				oldest = t
			}
		}
	}
	if st, err := q.js.Stream(ctx, jetstream.TasksStream); err != nil {
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
			if t, ok := q.firstTime(ctx, jetstream.TasksStream, info.State.FirstSeq); ok && (oldest.IsZero() || t.Before(oldest)) {
				oldest = t
			}
		}
	}
	// The ordered lane's deliveries, as its owner counts them (hold
	// markers and settled entries not yet removed are not deliveries).
	lane := q.src.Lane(ctx, nil)
	for _, v := range lane {
		s.Pending += v.Waiting
		s.AwaitingRetry += v.Retrying
		if !v.Oldest.IsZero() && (oldest.IsZero() || v.Oldest.Before(oldest)) {
			oldest = v.Oldest
		}
	}
	now := q.now()
	if !oldest.IsZero() {
		s.OldestPendingAgeSeconds = math.Max(0, now.Sub(oldest).Seconds())
	}
	if st, err := q.js.Stream(ctx, jetstream.DLQStream); err != nil {
		errs = append(errs, fmt.Errorf("stream %s: %w", jetstream.DLQStream, err))
	} else {
		s.DeadLetter = st.CachedInfo().State.Msgs
	}
	if st, err := q.js.Stream(ctx, jetstream.EventsStream); err != nil {
		errs = append(errs, fmt.Errorf("stream %s: %w", jetstream.EventsStream, err))
	} else {
		state := st.CachedInfo().State
		s.EventsStored, s.EventsBytes = state.Msgs, state.Bytes
		if state.Msgs > 0 && !state.FirstTime.IsZero() {
			s.LogOldest = timePtr(state.FirstTime)
		}
	}
	s.DeliveredLastHour, s.FailedLastHour = p.DeliveredLastHour, p.FailedLastHour
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
func (q *Queries) firstTime(ctx context.Context, stream string, seq uint64) (time.Time, bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := q.js.Stream(ctx, stream)
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
func (q *Queries) RunGauges(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		q.refreshGauges(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refreshGauges reads the gauges' figures once and hands them on.
func (q *Queries) refreshGauges(ctx context.Context) {
	s, lane, err := q.summary(ctx)
	if err != nil {
		q.log.Debug("refresh gauges", "err", err)
		return
	}
	g := Gauges{OldestPendingSeconds: s.OldestPendingAgeSeconds, DeadLetters: s.DeadLetter}
	if w, err := q.waiting(ctx, "*"); err == nil {
		g.Pending = make(map[string]uint64, len(w)+len(lane))
		for id, c := range w {
			g.Pending[id] = c.due + c.scheduled
		}
		for id, v := range lane {
			g.Pending[id] += v.Waiting // the ordered lane's count as waiting
		}
	}
	_, _, g.BreakerOpen = q.breakers.States()
	p := q.src.Process(q.now())
	g.Disabled = p.DisabledInForce
	g.Enabled = p.Endpoints - p.DisabledInForce
	q.gauges.SetGauges(g)
}

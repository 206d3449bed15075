package operate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dispatch/lane"
	"github.com/hookjet/hookjet/dispatch/settle"
	"github.com/hookjet/hookjet/jetstream"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/hookjet/hookjet/api"
)

// TestEventType is the type of the events SendTest sends.
const TestEventType = "hookjet.test"

// SendTest sends a signed test event to endpoint id only, through its
// normal delivery path (a task its drain delivers), and returns the event
// id: of typ with payload data, or, typ empty, a hookjet.test event.
func (o *Operator) SendTest(ctx context.Context, id, typ string, data []byte) (string, error) {
	ep := o.eps.Config(id)
	if ep == nil {
		return "", fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	now := o.now().UTC()
	n := nuid.Next()
	ev := settle.Event{ID: "test_" + n, Type: TestEventType, Key: "t" + n, At: now, Tenant: ep.Tenant}
	body, err := json.Marshal(map[string]string{"type": TestEventType, "endpoint": id, "sent_at": now.Format(time.RFC3339)})
	if err != nil {
		return "", err
	}
	if typ != "" {
		ev.Type, body = typ, data
	}
	msg := settle.TaskMsg(id, &ev, settle.State{}, body, nil, time.Time{})
	settle.MarkIncarnation(msg.Header, ep.CreatedAt)
	if err := o.publish(ctx, msg); err != nil {
		return "", fmt.Errorf("test event: %w", err)
	}
	o.published.Inc()
	o.wake(id)
	return ev.ID, nil
}

// Redeliver sends every event stored in HOOKJET_EVENTS between since and
// until (zero: now) that endpoint id's patterns match to that endpoint again,
// as tasks with the original event ids, through the endpoint's normal
// limits. It reads the log with an ordered consumer, in batches, so memory
// does not grow with the window. With dryRun it only counts.
func (o *Operator) Redeliver(ctx context.Context, id string, since, until time.Time, dryRun bool) (matched, queued int, err error) {
	ep := o.eps.Config(id)
	if ep == nil {
		return 0, 0, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	if until.IsZero() {
		until = o.now()
	}
	if !since.Before(until) {
		return 0, 0, fmt.Errorf("%w: since must be before until", api.ErrBadRequest)
	}
	st, err := o.js.Stream(ctx, jetstream.EventsStream)
	if err != nil {
		return 0, 0, fmt.Errorf("stream %s: %w", jetstream.EventsStream, err)
	}
	last := st.CachedInfo().State.LastSeq
	if st.CachedInfo().State.Msgs == 0 {
		return 0, 0, nil
	}
	var filters []string
	for _, p := range ep.Events {
		filters = append(filters, jetstream.EventsPrefix+p)
	}
	start := since
	cons, err := o.js.OrderedConsumer(ctx, jetstream.EventsStream, natsjs.OrderedConsumerConfig{
		FilterSubjects: filters, DeliverPolicy: natsjs.DeliverByStartTimePolicy, OptStartTime: &start,
		InactiveThreshold: jetstream.ReadInactive,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("read %s: %w", jetstream.EventsStream, err)
	}
	nonce := nuid.Next()[:8]
	for done := false; !done; {
		batch, err := cons.Fetch(256, natsjs.FetchMaxWait(time.Second))
		if err != nil {
			return matched, queued, fmt.Errorf("read %s: %w", jetstream.EventsStream, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			meta, err := m.Metadata()
			if err != nil || done {
				continue
			}
			if !meta.Timestamp.Before(until) || meta.Sequence.Stream > last {
				done = true
				continue
			}
			if meta.NumPending == 0 || meta.Sequence.Stream >= last {
				done = true
			}
			ev, _ := settle.EventOf(m, meta)
			if ev.BadTenant != "" || !settle.MayReceive(ep.Tenant, ev.Tenant) {
				continue // another tenant's event: never this endpoint's
			}
			if !ownFor(o.own, id, ep.Events, &ev, m.Headers(), m.Data()) {
				continue // hookjet's own event this endpoint may not take (the match stage's rule)
			}
			matched++
			if dryRun {
				continue
			}
			ev.Key = settle.RedeliverKey + strconv.FormatUint(ev.Seq, 10) + "x" + nonce
			ev.At = o.now() // retry.max_age counts from the redelivery
			task := settle.TaskMsg(id, &ev, settle.State{}, m.Data(), m.Headers(), time.Time{})
			settle.MarkIncarnation(task.Header, ep.CreatedAt)
			if key := jetstream.OrderingKey(m.Headers()); key != "" && ep.Ordered() {
				lane.Into(task, ep.ID, key, 0) // the ordered lane's entry: it takes its turn by its event sequence
			}
			if err := o.publish(ctx, task); err != nil {
				return matched, queued, fmt.Errorf("redeliver seq %d: %w", ev.Seq, err)
			}
			queued++
		}
		if err := batch.Error(); err != nil && !errors.Is(err, natsjs.ErrNoMessages) && !errors.Is(err, context.DeadlineExceeded) {
			return matched, queued, fmt.Errorf("read %s: %w", jetstream.EventsStream, err)
		}
		if n == 0 {
			done = true
		}
	}
	if queued > 0 {
		o.wake(id)
	}
	o.log.Info("redelivered history", "endpoint", id, "since", since, "until", until, "matched", matched, "queued", queued, "dry_run", dryRun)
	return matched, queued, nil
}

// Discard drops every delivery waiting for endpoint id (tasks and
// scheduled retries), its drain consumer and its disabled or held state,
// and returns how many deliveries it dropped. The admin API calls it when
// it deletes an endpoint it owns; its dead letters stay.
func (o *Operator) Discard(ctx context.Context, id string) (int, error) {
	st, err := o.js.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", jetstream.TasksStream, err)
	}
	tasks, err := o.tasks.Tasks(ctx, id)
	if err != nil {
		return 0, err
	}
	n := int(tasks)
	if err := o.js.DeleteConsumer(ctx, jetstream.TasksStream, jetstream.DrainConsumerName(id)); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
		o.log.Debug("delete drain consumer", "endpoint", id, "err", err)
	}
	for _, subj := range []string{jetstream.TasksPrefix + id, jetstream.SchedPrefix + id + ".>"} {
		if err := st.Purge(ctx, natsjs.WithPurgeSubject(subj)); err != nil {
			return n, fmt.Errorf("discard %s: %w", subj, err)
		}
	}
	// The ordered lane's entries of the endpoint (package dispatch/lane).
	ordered, err := o.js.Stream(ctx, jetstream.LaneStream)
	if err != nil {
		return n, fmt.Errorf("stream %s: %w", jetstream.LaneStream, err)
	}
	if info, err := ordered.Info(ctx, natsjs.WithSubjectFilter(jetstream.LanePrefix+id)); err == nil {
		n += int(info.State.Subjects[jetstream.LanePrefix+id])
	}
	if err := ordered.Purge(ctx, natsjs.WithPurgeSubject(jetstream.LanePrefix+id)); err != nil {
		return n, fmt.Errorf("discard %s: %w", jetstream.LanePrefix+id, err)
	}
	if err := o.states.Purge(ctx, id); err != nil {
		o.log.Warn("remove endpoint state", "endpoint", id, "err", err)
	}
	o.log.Info("discarded the deliveries waiting for a deleted endpoint", "endpoint", id, "discarded", n)
	return n, nil
}

// ownFor reports whether endpoint id, with patterns, may take ev by the
// rules of hookjet's own events: an event of another type may; one of a
// hookjet.* type needs hookjet's mark, a pattern naming hookjet. and
// another endpoint as its subject. Redelivery, which reads the stream by
// an endpoint's patterns rather than through the index, asks it.
func ownFor(own OwnEvents, id string, patterns []string, ev *settle.Event, hdr nats.Header, data []byte) bool {
	if !config.IsOperational(ev.Type) {
		return true
	}
	if own == nil {
		return false
	}
	about, ok := own.About(ev.ID, ev.Type, ev.Tenant, hdr, data)
	if !ok || about == id {
		return false
	}
	return slices.ContainsFunc(patterns, func(p string) bool { return config.MatchEvent(p, ev.Type) })
}

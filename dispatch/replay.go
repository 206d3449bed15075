package dispatch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/tracing"
)

// maxReplayErrors bounds the messages a replay's answer lists; Skipped
// counts every one.
const maxReplayErrors = 100

// Replay sends matching dead letters back to their endpoint (and only that
// endpoint) as tasks on hookjet.tasks.<endpoint>. Each keeps its event id, so
// its webhook-id, and starts with fresh attempts and a fresh retry.max_age.
// A dead letter is removed from HOOKJET_DLQ only after its task is stored.
// Matches are read and sent in batches, so memory does not grow with the
// number of dead letters.
func (d *Dispatcher) Replay(ctx context.Context, r api.ReplayRequest) (api.ReplayResult, error) {
	now := d.now()
	since, err := api.ParseTime(r.Since, now)
	if err != nil {
		return api.ReplayResult{}, fmt.Errorf("since: %w", err)
	}
	until, err := api.ParseTime(r.Until, now)
	if err != nil {
		return api.ReplayResult{}, fmt.Errorf("until: %w", err)
	}
	if r.Endpoint == "" && len(r.IDs) == 0 && r.Since == "" && r.Until == "" {
		return api.ReplayResult{}, fmt.Errorf("%w: name an endpoint, ids or a time range (replaying everything must be asked for with since)", api.ErrBadRequest)
	}
	if r.Endpoint != "" && d.endpoint(r.Endpoint) == nil {
		return api.ReplayResult{}, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, r.Endpoint)
	}
	st, err := d.o.JS.Stream(ctx, jetstream.DLQStream)
	if err != nil {
		return api.ReplayResult{}, fmt.Errorf("stream %s: %w", jetstream.DLQStream, err)
	}
	var res api.ReplayResult
	var sendErr error
	// Only the dead letters of the endpoints in force: a deleted endpoint's
	// never go to a later one with its id (dispatch/deadletters.go).
	err = jetstream.ScanDLQ(ctx, d.o.JS, jetstream.DLQFilter{Endpoint: r.Endpoint, Since: since, Until: until, IDs: r.IDs, Keep: d.ownsDeadLetter}, func(m jetstream.DLQMsg) bool {
		res.Matched++
		if r.DryRun {
			return true
		}
		e := m.Entry
		cur := d.endpoint(e.Endpoint)
		if cur == nil {
			res.Skipped++
			switch {
			case len(res.Errors) < maxReplayErrors:
				res.Errors = append(res.Errors, fmt.Sprintf("seq %d: endpoint %q is not configured", e.Seq, e.Endpoint))
			case len(res.Errors) == maxReplayErrors:
				res.Errors = append(res.Errors, "more skipped; skipped counts them all")
			}
			return true
		}
		ev := event{id: e.EventID, typ: e.EventType, key: "r" + strconv.FormatUint(e.Seq, 10), at: d.now(), tenant: e.Tenant}
		out := taskMsg(e.Endpoint, &ev, attemptState{}, m.Msg.Data(), m.Msg.Headers(), time.Time{})
		markIncarnation(out.Header, cur.set.Load().ep.CreatedAt) // the drain drops it if the endpoint is deleted meanwhile
		inLane := laneReplay(out, cur, m.Msg.Headers())
		// tracing: a replay span, child of the dead letter's traceparent; the replay carries its own.
		span := d.o.Tracer.StartReplay(ctx, tracing.Header(m.Msg.Headers()), tracing.Replay{Endpoint: e.Endpoint, EventType: e.EventType, EventID: e.EventID, Seq: e.Seq})
		span.Inject(tracing.Header(out.Header))
		sendErr = d.settle.publish(out)
		span.End(sendErr) // tracing
		if sendErr != nil {
			sendErr = fmt.Errorf("replay seq %d: %w", e.Seq, sendErr)
			return false
		}
		d.o.Metrics.Published.Inc()
		if !inLane {
			d.drains.Note(e.Endpoint, time.Time{})
		}
		if err := st.DeleteMsg(ctx, e.Seq); err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) {
			sendErr = fmt.Errorf("remove replayed dead letter %d: %w", e.Seq, err)
			return false
		}
		res.ReplayedTo(e.Endpoint) // the endpoints replayed to, for the answer's waiting
		return true
	})
	if err == nil {
		err = sendErr
	}
	if err != nil {
		return res, err
	}
	d.log.Info("replayed dead letters", "matched", res.Matched, "replayed", res.Replayed, "skipped", res.Skipped)
	return res, nil
}

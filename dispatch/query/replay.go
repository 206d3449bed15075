package query

import (
	"context"
	"errors"
	"fmt"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/jetstream"
)

// maxReplayErrors bounds the messages a replay's answer lists; Skipped
// counts every one.
const maxReplayErrors = 100

// Replay sends matching dead letters back to their endpoint (and only that
// endpoint) as tasks on hookjet.tasks.<endpoint> (the Requeuer stores
// them). Each keeps its event id, so its webhook-id, and starts with fresh
// attempts and a fresh retry.max_age. A dead letter is removed from
// HOOKJET_DLQ only after its task is stored. Matches are read and sent in
// batches, so memory does not grow with the number of dead letters.
func (q *Queries) Replay(ctx context.Context, r api.ReplayRequest) (api.ReplayResult, error) {
	now := q.now()
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
	if r.Endpoint != "" {
		if _, ok := q.src.Owner(r.Endpoint); !ok {
			return api.ReplayResult{}, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, r.Endpoint)
		}
	}
	st, err := q.js.Stream(ctx, jetstream.DLQStream)
	if err != nil {
		return api.ReplayResult{}, fmt.Errorf("stream %s: %w", jetstream.DLQStream, err)
	}
	var res api.ReplayResult
	var sendErr error
	// Only the dead letters of the endpoints in force: a deleted endpoint's
	// never go to a later one with its id (deadletters.go).
	err = jetstream.ScanDLQ(ctx, q.js, jetstream.DLQFilter{Endpoint: r.Endpoint, Since: since, Until: until, IDs: r.IDs, Keep: q.ownsDeadLetter}, func(m jetstream.DLQMsg) bool {
		res.Matched++
		if r.DryRun {
			return true
		}
		e := m.Entry
		stored, err := q.requeue.Requeue(ctx, m)
		if err != nil {
			sendErr = fmt.Errorf("replay seq %d: %w", e.Seq, err)
			return false
		}
		if !stored {
			res.Skipped++
			switch {
			case len(res.Errors) < maxReplayErrors:
				res.Errors = append(res.Errors, fmt.Sprintf("seq %d: endpoint %q is not configured", e.Seq, e.Endpoint))
			case len(res.Errors) == maxReplayErrors:
				res.Errors = append(res.Errors, "more skipped; skipped counts them all")
			}
			return true
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
	q.log.Info("replayed dead letters", "matched", res.Matched, "replayed", res.Replayed, "skipped", res.Skipped)
	return res, nil
}

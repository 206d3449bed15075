package query

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// Dead letters belong to an incarnation of their endpoint id: the API
// endpoint created at a given time (header Hookjet-Endpoint-Created, its
// created_at), or the config file's (no header). Only the incarnation in
// force sees its dead letters: listed, counted, replayed. Those of an
// endpoint deleted since are listed with ?deleted=true, for operators, and
// never reach a later endpoint with the same id.
//
// Dead letters stored before hookjet marked them carry no header: they
// belong to a config-file endpoint in force with their id, and to no API
// endpoint (which may be a later one with the id of a deleted one; they are
// listed with deleted=true). With no endpoint of their id in force they are
// listed as before (a config endpoint removed from the file, rejected
// outbox rows on _outbox).
//
// They also belong to the tenant their event names: an endpoint moved to
// another tenant (a changed file, PATCH tenant) keeps its incarnation, but
// its former tenant's dead letters are no longer its own. They are listed
// with deleted=true, for operators, and never replayed to the new tenant's
// URL (the drain and the ordered lane would discard them: the event is not
// the endpoint's tenant's).

// ownsDeadLetter reports whether dead letter e belongs to the endpoint in
// force with its id: its incarnation, and an event its tenant may receive.
func (q *Queries) ownsDeadLetter(e jetstream.DLQEntry) bool {
	o, ok := q.src.Owner(e.Endpoint)
	if !ok {
		return e.Incarnation == ""
	}
	return o.owns(e)
}

// owns reports whether dead letter e, of o's endpoint, is o's: its
// incarnation, and an event of o's tenant (any, when o has none).
func (o Owner) owns(e jetstream.DLQEntry) bool {
	return e.Incarnation == o.Incarnation && (o.Tenant == "" || o.Tenant == e.Tenant)
}

// dlqKeep is the Keep of a listing: the dead letters of the endpoints in
// force, or with deleted those of deleted ones.
func (q *Queries) dlqKeep(deleted bool) func(jetstream.DLQEntry) bool {
	if deleted {
		return func(e jetstream.DLQEntry) bool { return !q.ownsDeadLetter(e) }
	}
	return q.ownsDeadLetter
}

// DeadLetters lists dead letters matching f, oldest first: those of the
// endpoints in force, or with f.Deleted those of deleted endpoints.
func (q *Queries) DeadLetters(ctx context.Context, f jetstream.DLQFilter) ([]jetstream.DLQEntry, error) {
	f.Keep = q.dlqKeep(f.Deleted)
	return jetstream.DeadLetters(ctx, q.js, f)
}

// DeadLetterStats summarises the dead letters of the endpoints in force per
// endpoint.
func (q *Queries) DeadLetterStats(ctx context.Context) ([]jetstream.DLQStat, error) {
	return jetstream.DeadLetterStats(ctx, q.js, q.ownsDeadLetter)
}

// ownCounts corrects the per-subject dead-letter counts of the endpoints in
// ids to those of the endpoint in force. One or two lookups per endpoint
// with dead letters: when the oldest one on its subject is its own, and for
// an endpoint that has a tenant also the newest, all are (an earlier
// incarnation's were stored before this one was created; a former tenant's
// before the endpoint changed tenant, and a change back would make the
// newest another tenant's until it has dead letters of its own); otherwise
// the subject is read and counted one by one, which only an id created
// again, or an endpoint moved to another tenant, while dead letters of
// before remain costs.
func (q *Queries) ownCounts(ctx context.Context, ids []string, counts map[string]uint64) error {
	var st natsjs.Stream
	for _, id := range ids {
		if counts[id] == 0 {
			continue
		}
		if st == nil {
			var err error
			if st, err = q.js.Stream(ctx, jetstream.DLQStream); err != nil {
				return fmt.Errorf("stream %s: %w", jetstream.DLQStream, err)
			}
		}
		own, err := q.ownsEnds(ctx, st, id)
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			counts[id] = 0
			continue
		}
		if err != nil {
			return err
		}
		if own {
			continue
		}
		n := uint64(0)
		err = jetstream.ScanDLQ(ctx, q.js, jetstream.DLQFilter{Endpoint: id, Keep: q.ownsDeadLetter}, func(jetstream.DLQMsg) bool {
			n++
			return true
		})
		if err != nil {
			return err
		}
		counts[id] = n
	}
	return nil
}

// ownsEnds reports whether the oldest dead letter on endpoint id's subject
// is the endpoint's own and, when the endpoint has a tenant (which it may
// have changed), the newest too; natsjs.ErrMsgNotFound when it has none.
func (q *Queries) ownsEnds(ctx context.Context, st natsjs.Stream, id string) (bool, error) {
	subj := jetstream.DLQPrefix + id
	first, err := st.GetMsg(ctx, 1, natsjs.WithGetMsgSubject(subj))
	if err != nil {
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			return false, err
		}
		return false, fmt.Errorf("first dead letter of %s: %w", id, err)
	}
	if !q.ownsDeadLetter(dlqOwner(id, first.Header)) {
		return false, nil
	}
	o, ok := q.src.Owner(id)
	if !ok || o.Tenant == "" {
		return true, nil
	}
	last, err := st.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		return false, fmt.Errorf("last dead letter of %s: %w", id, err)
	}
	return q.ownsDeadLetter(dlqOwner(id, last.Header)), nil
}

// dlqOwner is what ownsDeadLetter reads of a dead letter with headers h.
func dlqOwner(id string, h nats.Header) jetstream.DLQEntry {
	return jetstream.DLQEntry{Endpoint: id, Incarnation: h.Get(jetstream.HdrIncarnation), Tenant: h.Get(jetstream.HdrTenant)}
}

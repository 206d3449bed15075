package dispatch

import (
	"context"
	"errors"
	"fmt"

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

// ownsDeadLetter reports whether dead letter e belongs to the endpoint in
// force with its id.
func (d *Dispatcher) ownsDeadLetter(e jetstream.DLQEntry) bool {
	ep := d.endpoint(e.Endpoint)
	if ep == nil {
		return e.Incarnation == ""
	}
	return e.Incarnation == incarnation(ep.set.Load().ep.CreatedAt)
}

// dlqKeep is the Keep of a listing: the dead letters of the endpoints in
// force, or with deleted those of deleted ones.
func (d *Dispatcher) dlqKeep(deleted bool) func(jetstream.DLQEntry) bool {
	if deleted {
		return func(e jetstream.DLQEntry) bool { return !d.ownsDeadLetter(e) }
	}
	return d.ownsDeadLetter
}

// DeadLetters lists dead letters matching f, oldest first: those of the
// endpoints in force, or with f.Deleted those of deleted endpoints.
func (d *Dispatcher) DeadLetters(ctx context.Context, f jetstream.DLQFilter) ([]jetstream.DLQEntry, error) {
	f.Keep = d.dlqKeep(f.Deleted)
	return jetstream.DeadLetters(ctx, d.o.JS, f)
}

// DeadLetterStats summarises the dead letters of the endpoints in force per
// endpoint.
func (d *Dispatcher) DeadLetterStats(ctx context.Context) ([]jetstream.DLQStat, error) {
	return jetstream.DeadLetterStats(ctx, d.o.JS, d.ownsDeadLetter)
}

// ownCounts corrects the per-subject dead-letter counts of the endpoints in
// ids to those of the endpoint in force. One lookup per endpoint with dead
// letters: when the oldest one on its subject is its own, all are (an
// earlier incarnation's were stored before this one was created); when it
// is not, the subject is read and counted one by one, which only an id
// created again while an earlier endpoint's dead letters remain costs.
func (d *Dispatcher) ownCounts(ctx context.Context, ids []string, counts map[string]uint64) error {
	var st natsjs.Stream
	for _, id := range ids {
		if counts[id] == 0 {
			continue
		}
		if st == nil {
			var err error
			if st, err = d.o.JS.Stream(ctx, jetstream.DLQStream); err != nil {
				return fmt.Errorf("stream %s: %w", jetstream.DLQStream, err)
			}
		}
		first, err := st.GetMsg(ctx, 1, natsjs.WithGetMsgSubject(jetstream.DLQPrefix+id))
		if errors.Is(err, natsjs.ErrMsgNotFound) {
			counts[id] = 0
			continue
		}
		if err != nil {
			return fmt.Errorf("first dead letter of %s: %w", id, err)
		}
		if d.ownsDeadLetter(jetstream.DLQEntry{Endpoint: id, Incarnation: first.Header.Get(hdrIncarnation)}) {
			continue
		}
		n := uint64(0)
		err = jetstream.ScanDLQ(ctx, d.o.JS, jetstream.DLQFilter{Endpoint: id, Keep: d.ownsDeadLetter}, func(jetstream.DLQMsg) bool {
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

package jetstream

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/eventindex"
)

// EventIndex follows HOOKJET_EVENTS into this process's list index of it
// (package eventindex, a bbolt file in data_dir): an ordered consumer of
// the messages' headers alone (no payload crosses the wire for it) from
// the sequence after the last one indexed, one goroutine, owned by the
// EventIndex until Close. Every identityCheck it also hands the index the
// stream's first sequence, so events that left the stream (streams.max_age,
// streams.max_bytes, hookjet's trimming) are forgotten even while nothing
// is published. [EventIndex.Page] answers GET /api/v1/events from it.
type EventIndex struct {
	js   natsjs.JetStream
	idx  *eventindex.Index
	log  *slog.Logger
	stop context.CancelFunc
	done chan struct{}
	once sync.Once
	// checked is the sequence indexed at the last check (the follower's
	// goroutine only).
	checked uint64
}

// eventCatchUp bounds how long a query waits for the index to reach the
// stream's last sequence; past it the query answers from what is indexed.
const eventCatchUp = time.Second

// FollowEvents opens the index at path and starts following HOOKJET_EVENTS.
func FollowEvents(js natsjs.JetStream, path string, log *slog.Logger) (*EventIndex, error) {
	idx, err := eventindex.Open(path)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &EventIndex{js: js, idx: idx, log: log, stop: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f, nil
}

// Close stops following and closes the index file.
func (f *EventIndex) Close() {
	f.once.Do(func() {
		f.stop()
		<-f.done
		if err := f.idx.Close(); err != nil { // waits for a generation being written
			f.log.Warn("close event index", "err", err)
		}
	})
}

// Applied is the last HOOKJET_EVENTS sequence indexed.
func (f *EventIndex) Applied() uint64 { return f.idx.Applied() }

// Stats is what the index holds.
func (f *EventIndex) Stats() eventindex.Stats { return f.idx.Stats() }

func (f *EventIndex) run(ctx context.Context) {
	defer close(f.done)
	keepFollowing(ctx, f.log, "event index: following "+EventsStream, f.follow)
}

// follow indexes the stream from the sequence after the last indexed one
// until ctx ends or an error.
func (f *EventIndex) follow(ctx context.Context) error {
	if err := f.resume(ctx); err != nil {
		return err
	}
	sealed := f.idx.Sealed()
	return readFromOpts(ctx, f.js, EventsStream, f.idx.Applied()+1, true, f.check, func(m natsjs.Msg, seq uint64) error {
		if err := f.idx.Add(indexEntryOf(m, seq)); err != nil {
			return err
		}
		if s := f.idx.Sealed(); s != sealed {
			sealed = s
			return f.prune(ctx)
		}
		return nil
	})
}

// indexEntryOf is the index's summary of the event m at seq (headers only).
func indexEntryOf(m natsjs.Msg, seq uint64) eventindex.Entry {
	h := m.Headers()
	e := eventindex.Entry{Seq: seq, Type: strings.TrimPrefix(m.Subject(), EventsPrefix)}
	e.ID, e.Tenant, e.Key = h.Get(HdrMsgID), h.Get(HdrTenant), h.Get(HdrOrderingKey)
	if e.ID == "" {
		e.ID = "seq_" + strconv.FormatUint(seq, 10) // the id the fan-out gives it
	}
	e.Size, _ = strconv.Atoi(h.Get("Nats-Msg-Size"))
	if meta, err := m.Metadata(); err == nil {
		e.PublishedAt = meta.Timestamp.UTC()
	}
	return e
}

// resume checks that the index is of the stream there now (it is emptied
// when the stream was created anew) and moves it past the events the
// stream no longer holds.
func (f *EventIndex) resume(ctx context.Context) error {
	st, err := f.js.Stream(ctx, EventsStream)
	if err != nil {
		return fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	info := st.CachedInfo()
	id := info.Created.UTC().Format(time.RFC3339Nano)
	if f.idx.Stream() != id || info.State.LastSeq < f.idx.Applied() {
		if err := f.idx.Reset(id); err != nil {
			return err
		}
	}
	if err := f.idx.Skip(info.State.FirstSeq); err != nil {
		return err
	}
	return f.idx.Prune(info.State.FirstSeq)
}

// check, every identityCheck, fails when HOOKJET_EVENTS is not the stream
// the index was built from any more, and forgets the events it dropped.
func (f *EventIndex) check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := f.js.Stream(ctx, EventsStream)
	if err != nil {
		return nil // NATS slow or down: the consumer says so if it lasts
	}
	info := st.CachedInfo()
	applied := f.idx.Applied()
	if info.Created.UTC().Format(time.RFC3339Nano) != f.idx.Stream() || info.State.LastSeq < applied {
		return fmt.Errorf("%s was created anew: indexing it from its start", EventsStream)
	}
	// An ordered consumer that stopped delivering (its server-side
	// consumer gone while the follower was busy, a reconnect) is started
	// again from the sequence after the last one indexed.
	stalled := info.State.LastSeq > applied && applied == f.checked
	f.checked = applied
	if stalled {
		return fmt.Errorf("no event came for %s while %d wait: reading again", identityCheck, info.State.LastSeq-applied)
	}
	return f.idx.Prune(info.State.FirstSeq)
}

// prune forgets the events the stream has dropped.
func (f *EventIndex) prune(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := f.js.Stream(ctx, EventsStream)
	if err != nil {
		return nil // the next check prunes
	}
	return f.idx.Prune(st.CachedInfo().State.FirstSeq)
}

// state is the stream's first and last sequence now, once the index has
// caught up with the last (or eventCatchUp passed).
func (f *EventIndex) state(ctx context.Context) (first uint64, err error) {
	st, err := f.js.Stream(ctx, EventsStream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	s := st.CachedInfo().State
	wait, cancel := context.WithTimeout(ctx, eventCatchUp)
	defer cancel()
	f.idx.Wait(wait, s.LastSeq)
	return s.FirstSeq, nil
}

// Page returns a page of the stored events matching q, newest first, from
// the index: no message of the stream is read.
func (f *EventIndex) Page(ctx context.Context, q api.EventQuery) (api.EventPage, error) {
	first, err := f.state(ctx)
	if err != nil {
		return api.EventPage{}, err
	}
	entries, next, err := f.idx.Page(eventindex.Query{
		Type: q.Type, Tenant: q.Tenant, Prefix: q.Prefix, Since: q.Since, Until: q.Until,
		Before: q.Cursor, First: first, Limit: q.Limit,
	})
	if err != nil {
		return api.EventPage{}, fmt.Errorf("event index: %w", err)
	}
	page := api.EventPage{Events: make([]api.EventSummary, len(entries))}
	for i, e := range entries {
		page.Events[i] = api.EventSummary{ID: e.ID, Type: e.Type, Tenant: e.Tenant, Key: e.Key, PublishedAt: e.PublishedAt, Size: e.Size, Seq: e.Seq}
	}
	if next > 0 {
		page.Next = strconv.FormatUint(next, 10)
	}
	return page, nil
}

// Lookup returns the sequence of the newest stored event with id; found is
// false when the stream holds none (any more).
func (f *EventIndex) Lookup(ctx context.Context, id string) (seq uint64, found bool, err error) {
	first, err := f.state(ctx)
	if err != nil {
		return 0, false, err
	}
	e, found, err := f.idx.Lookup(id)
	if err != nil {
		return 0, false, fmt.Errorf("event index: %w", err)
	}
	if !found || e.Seq < first {
		return 0, false, nil
	}
	return e.Seq, true, nil
}

package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/catalog"
)

// eventTypeRecordVersion is the version of EventTypeRecord's JSON form.
const eventTypeRecordVersion = 1

// EventTypeRecord is the stored form of an event type in
// HOOKJET_EVENT_TYPES, keyed by its name.
type EventTypeRecord struct {
	V int `json:"v"`
	catalog.Definition
	// Source is api (created through the admin API) or config (a config
	// file's, stored by the process whose file declares it).
	Source    catalog.Source `json:"source"`
	CreatedAt time.Time      `json:"created_at"`
	UpdatedAt time.Time      `json:"updated_at"`
	// Revision is the bucket's revision of the value (not stored).
	Revision uint64 `json:"-"`
}

// Errors of the event-type store.
var (
	// ErrEventTypeExists is returned by Create for a name that is taken.
	ErrEventTypeExists = errors.New("event type exists")
	// ErrEventTypeChanged is returned by Update and Delete when the value
	// changed since it was read.
	ErrEventTypeChanged = errors.New("event type changed meanwhile")
)

// EventTypeStore keeps the event-type catalogue in the KV bucket
// HOOKJET_EVENT_TYPES, shared by every hookjet process on the same NATS.
// It is safe for concurrent use.
type EventTypeStore struct {
	kv  natsjs.KeyValue
	log *slog.Logger
}

// eventTypeBucketConfig is HOOKJET_EVENT_TYPES' configuration: one
// revision per key, values bounded (a definition comes from a body of at
// most 1 MiB).
func eventTypeBucketConfig(replicas int) natsjs.KeyValueConfig {
	return natsjs.KeyValueConfig{
		Bucket:       EventTypeBucket,
		Description:  "hookjet event types (name, description, JSON Schema, examples), by name",
		History:      1,
		Storage:      natsjs.FileStorage,
		Replicas:     replicas,
		MaxValueSize: 1 << 20,
		MaxBytes:     1 << 30,
	}
}

// OpenEventTypeStore creates or updates the bucket and returns the store.
func OpenEventTypeStore(ctx context.Context, js natsjs.JetStream, replicas int, log *slog.Logger) (*EventTypeStore, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &EventTypeStore{log: log}
	if err := retry(ctx, log, "bucket "+EventTypeBucket, func(ctx context.Context) (err error) {
		s.kv, err = js.CreateOrUpdateKeyValue(ctx, eventTypeBucketConfig(replicas))
		return err
	}); err != nil {
		return nil, err
	}
	return s, nil
}

func encodeEventType(rec EventTypeRecord) ([]byte, error) {
	rec.V = eventTypeRecordVersion
	return json.Marshal(rec)
}

func decodeEventType(name string, rev uint64, b []byte) (EventTypeRecord, error) {
	var rec EventTypeRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, fmt.Errorf("event type %s: %w", name, err)
	}
	rec.Name, rec.Revision = name, rev
	return rec, nil
}

// Get returns the stored type named name; false when there is none.
func (s *EventTypeStore) Get(ctx context.Context, name string) (EventTypeRecord, bool, error) {
	e, err := s.kv.Get(ctx, name)
	switch {
	case errors.Is(err, natsjs.ErrKeyNotFound):
		return EventTypeRecord{}, false, nil
	case err != nil:
		return EventTypeRecord{}, false, fmt.Errorf("bucket %s: %w", EventTypeBucket, err)
	}
	rec, err := decodeEventType(name, e.Revision(), e.Value())
	return rec, err == nil, err
}

// Create stores rec under its name, failing with [ErrEventTypeExists] when
// the name is taken.
func (s *EventTypeStore) Create(ctx context.Context, rec EventTypeRecord) (EventTypeRecord, error) {
	b, err := encodeEventType(rec)
	if err != nil {
		return rec, err
	}
	rev, err := s.kv.Create(ctx, rec.Name, b)
	switch {
	case errors.Is(err, natsjs.ErrKeyExists):
		return rec, fmt.Errorf("%w: %s", ErrEventTypeExists, rec.Name)
	case err != nil:
		return rec, fmt.Errorf("bucket %s: %w", EventTypeBucket, err)
	}
	rec.Revision = rev
	return rec, nil
}

// Update replaces the value at revision rec.Revision, failing with
// [ErrEventTypeChanged] when another writer changed it since.
func (s *EventTypeStore) Update(ctx context.Context, rec EventTypeRecord) (EventTypeRecord, error) {
	b, err := encodeEventType(rec)
	if err != nil {
		return rec, err
	}
	rev, err := s.kv.Update(ctx, rec.Name, b, rec.Revision)
	if err != nil {
		if isWrongRevision(err) {
			return rec, fmt.Errorf("%w: %s", ErrEventTypeChanged, rec.Name)
		}
		return rec, fmt.Errorf("bucket %s: %w", EventTypeBucket, err)
	}
	rec.Revision = rev
	return rec, nil
}

// Put stores rec whatever is there (a config file's type).
func (s *EventTypeStore) Put(ctx context.Context, rec EventTypeRecord) error {
	b, err := encodeEventType(rec)
	if err != nil {
		return err
	}
	if _, err := s.kv.Put(ctx, rec.Name, b); err != nil {
		return fmt.Errorf("bucket %s: %w", EventTypeBucket, err)
	}
	return nil
}

// Delete removes the type named name if it is still at revision rev (0:
// whatever it is).
func (s *EventTypeStore) Delete(ctx context.Context, name string, rev uint64) error {
	var opts []natsjs.KVDeleteOpt
	if rev != 0 {
		opts = append(opts, natsjs.LastRevision(rev))
	}
	if err := s.kv.Delete(ctx, name, opts...); err != nil {
		if isWrongRevision(err) {
			return fmt.Errorf("%w: %s", ErrEventTypeChanged, name)
		}
		return fmt.Errorf("bucket %s: %w", EventTypeBucket, err)
	}
	return nil
}

// isWrongRevision reports a compare-and-set's refusal.
func isWrongRevision(err error) bool {
	var apiErr *natsjs.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == natsjs.JSErrCodeStreamWrongLastSequence || errors.Is(err, natsjs.ErrKeyExists)
}

// Watch calls fn with every stored type, then once with nil (the stored
// ones are all read), and then, from one goroutine, for every change: the
// new record, or a record with only Name and Revision set and deleted
// true. It returns once the stored types were read; stop ends the watch
// and waits for fn to return.
func (s *EventTypeStore) Watch(ctx context.Context, fn func(rec *EventTypeRecord, deleted bool)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	w, err := s.kv.WatchAll(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch %s: %w", EventTypeBucket, err)
	}
	handle := func(e natsjs.KeyValueEntry) {
		if e == nil {
			fn(nil, false)
			return
		}
		if e.Operation() != natsjs.KeyValuePut {
			fn(&EventTypeRecord{Definition: catalog.Definition{Name: e.Key()}, Revision: e.Revision()}, true)
			return
		}
		rec, err := decodeEventType(e.Key(), e.Revision(), e.Value())
		if err != nil {
			s.log.Warn("skipping an event type that does not decode", "bucket", EventTypeBucket, "key", e.Key(), "err", err)
			return
		}
		fn(&rec, false)
	}
	for initial := true; initial; {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				cancel()
				return nil, fmt.Errorf("watch %s: closed before the stored types were read", EventTypeBucket)
			}
			handle(e)
			initial = e != nil
		case <-ctx.Done():
			_ = w.Stop()
			cancel()
			return nil, fmt.Errorf("watch %s: %w", EventTypeBucket, ctx.Err())
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case e, ok := <-w.Updates():
				if !ok {
					return
				}
				if e != nil {
					handle(e)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		_ = w.Stop()
		<-done
	}, nil
}

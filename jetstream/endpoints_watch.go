package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// watchBuffer is how many messages a watch pulls ahead of fn: the server
// sends no more until fn has taken them, so a slow fn slows the watch
// instead of overflowing a subscription's buffer (which drops messages).
const watchBuffer = 512

// Entry is one value of an endpoint bucket as a watch sees it: its key and
// revision, whether it is a delete, and the digest its writer stored beside
// it (config endpoints, [EndpointStore.PutAll]; empty otherwise). Record
// decodes the value, which is left undecoded until asked for.
type Entry struct {
	ID       string
	Revision uint64
	Deleted  bool
	Digest   string
	value    []byte
	pending  uint64 // messages behind this one when it was sent
}

// Record decodes the entry's endpoint, reporting false for a delete or a
// value that is not an endpoint (no url: a disabled state of the first
// design).
func (e Entry) Record() (EndpointRecord, bool, error) {
	if e.Deleted {
		return EndpointRecord{}, false, nil
	}
	return decodeValue(e.ID, e.Revision, e.value)
}

// Watch calls fn with every stored endpoint, then returns and keeps calling
// fn, from one goroutine and in the bucket's order, for every change: the
// new record, or nil when the endpoint was deleted. Values that are not
// endpoints are skipped. stop ends the watch and waits for fn to return;
// cancelling ctx ends it too.
func (s *EndpointStore) Watch(ctx context.Context, fn func(id string, rec *EndpointRecord)) (stop func(), err error) {
	return s.WatchEntries(ctx, func(e Entry) {
		if e.Deleted {
			fn(e.ID, nil)
			return
		}
		rec, ok, err := e.Record()
		switch {
		case err != nil:
			s.log.Warn("skipping an endpoint that does not decode", "bucket", s.bucket, "key", e.ID, "err", err)
		case !ok:
			s.log.Debug("skipping a value that is not an endpoint", "bucket", s.bucket, "key", e.ID)
		default:
			fn(e.ID, &rec)
		}
	})
}

// WatchEntries is Watch with the entries undecoded: fn sees every stored
// value (no deletes among them), then every change, deletes included. It
// reads the bucket through an ordered pull consumer, which asks for at most
// watchBuffer messages ahead of fn and recreates itself after the last
// message it handed over when it misses one or a heartbeat: a slow fn or a
// reconnect delays changes, it never loses one.
func (s *EndpointStore) WatchEntries(ctx context.Context, fn func(Entry)) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	fail := func(err error) (func(), error) {
		cancel()
		return nil, fmt.Errorf("watch %s: %w", s.bucket, err)
	}
	prefix := "$KV." + s.bucket + "."
	cons, err := s.js.OrderedConsumer(ctx, "KV_"+s.bucket, natsjs.OrderedConsumerConfig{
		FilterSubjects: []string{prefix + ">"},
		DeliverPolicy:  natsjs.DeliverLastPerSubjectPolicy,
	})
	if err != nil {
		return fail(err)
	}
	it, err := cons.Messages(natsjs.PullMaxMessages(watchBuffer))
	if err != nil {
		return fail(err)
	}
	next := func() (Entry, bool) {
		for {
			m, err := it.Next(natsjs.NextContext(ctx))
			if err != nil {
				if ctx.Err() != nil || errors.Is(err, natsjs.ErrMsgIteratorClosed) {
					return Entry{}, false
				}
				s.log.Warn("endpoint watch; retrying", "bucket", s.bucket, "err", err)
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
				continue
			}
			if e, ok := watchedEntry(m, prefix); ok {
				return e, true
			}
		}
	}
	// The values stored when the consumer was made come first; the last of
	// them has nothing pending behind it.
	if info := cons.CachedInfo(); info == nil || info.NumPending > 0 {
		for {
			e, ok := next()
			if !ok {
				it.Stop()
				return fail(errors.Join(ctx.Err(), errors.New("stopped before the stored values were read")))
			}
			if !e.Deleted {
				fn(e)
			}
			if e.pending == 0 {
				break
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			e, ok := next()
			if !ok {
				return
			}
			fn(e)
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			it.Stop()
			wg.Wait()
		})
	}, nil
}

// Headers of an endpoint bucket's messages.
const (
	hdrKVOperation  = "KV-Operation"       // DEL or PURGE on a delete (nats.go's KV)
	hdrMarkerReason = "Nats-Marker-Reason" // a server's delete marker (MaxAge, Purge, Remove)
	// HdrDigest carries the digest of the definition a config endpoint's
	// value seals (see [EndpointStore.Digest]).
	HdrDigest = "Hookjet-Digest"
)

// watchedEntry reads a watched message, reporting false for one that is not an
// entry of the bucket.
func watchedEntry(m natsjs.Msg, prefix string) (Entry, bool) {
	id, ok := strings.CutPrefix(m.Subject(), prefix)
	if !ok || id == "" {
		return Entry{}, false
	}
	meta, err := m.Metadata()
	if err != nil {
		return Entry{}, false
	}
	e := Entry{ID: id, Revision: meta.Sequence.Stream, pending: meta.NumPending, value: m.Data()}
	if h := m.Headers(); h != nil {
		switch h.Get(hdrKVOperation) {
		case "DEL", "PURGE":
			e.Deleted = true
		}
		switch h.Get(hdrMarkerReason) {
		case "MaxAge", "Purge", "Remove":
			e.Deleted = true
		}
		e.Digest = h.Get(HdrDigest)
	}
	if e.Deleted {
		e.value = nil
	}
	return e, true
}

package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/logindex"
)

// LogIndex follows HOOKJET_LOG into this process's index of it (package
// logindex, a bbolt file in data_dir): an ordered consumer from the
// sequence after the last one indexed, one goroutine, owned by the
// LogIndex until Close. [LogReader] answers an event's records and an
// endpoint's pages from it.
type LogIndex struct {
	js   natsjs.JetStream
	idx  *logindex.Index
	log  *slog.Logger
	stop context.CancelFunc
	done chan struct{}
	once sync.Once
}

// Bounds of the follower.
const (
	// indexCatchUp bounds how long a query waits for the index to reach
	// the stream's last sequence; past it the query answers from what is
	// indexed (a process indexing a long log for the first time).
	indexCatchUp = 2 * time.Second
	// followRetry is the pause before the follower starts again after an
	// error (NATS down, the stream missing).
	followRetry = time.Second
)

// FollowLog opens the index at path and starts following HOOKJET_LOG.
func FollowLog(js natsjs.JetStream, path string, log *slog.Logger) (*LogIndex, error) {
	idx, err := logindex.Open(path)
	if err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f := &LogIndex{js: js, idx: idx, log: log, stop: cancel, done: make(chan struct{})}
	go f.run(ctx)
	return f, nil
}

// Close stops following and closes the index file.
func (f *LogIndex) Close() {
	f.once.Do(func() {
		f.stop()
		<-f.done
		if err := f.idx.Close(); err != nil {
			f.log.Warn("close delivery log index", "err", err)
		}
	})
}

// Applied is the last HOOKJET_LOG sequence indexed.
func (f *LogIndex) Applied() uint64 { return f.idx.Applied() }

func (f *LogIndex) run(ctx context.Context) {
	defer close(f.done)
	keepFollowing(ctx, f.log, "delivery log index: following "+LogStream, f.follow)
}

// follow indexes the stream from the sequence after the last indexed one
// until ctx ends or an error.
func (f *LogIndex) follow(ctx context.Context) error {
	first, err := f.resume(ctx)
	if err != nil {
		return err
	}
	sealed := f.idx.Sealed()
	return readFrom(ctx, f.js, LogStream, f.idx.Applied()+1, f.sameStream, func(m natsjs.Msg, seq uint64) error {
		var r struct {
			EventID  string `json:"event_id"`
			Endpoint string `json:"endpoint"`
		}
		_ = json.Unmarshal(m.Data(), &r) // unreadable: indexed as nothing
		if err := f.idx.Add(seq, r.EventID, r.Endpoint); err != nil {
			return err
		}
		if s := f.idx.Sealed(); s != sealed {
			sealed = s
			f.prune(ctx, first)
		}
		return nil
	})
}

// resume checks that the index is of the stream there now (it is emptied
// when the stream was created anew) and moves it past the records the
// stream no longer holds. It returns the stream's first sequence.
func (f *LogIndex) resume(ctx context.Context) (uint64, error) {
	st, err := f.js.Stream(ctx, LogStream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", LogStream, err)
	}
	info := st.CachedInfo()
	id := info.Created.UTC().Format(time.RFC3339Nano)
	if f.idx.Stream() != id || info.State.LastSeq < f.idx.Applied() {
		if err := f.idx.Reset(id); err != nil {
			return 0, err
		}
	}
	if err := f.idx.Skip(info.State.FirstSeq); err != nil {
		return 0, err
	}
	return info.State.FirstSeq, f.idx.Prune(info.State.FirstSeq)
}

// identityCheck is how often the follower checks that the stream it
// follows is the one it indexed (not deleted and created anew).
const identityCheck = 5 * time.Second

// sameStream returns an error when HOOKJET_LOG is not the stream the index
// was built from any more.
func (f *LogIndex) sameStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := f.js.Stream(ctx, LogStream)
	if err != nil {
		return nil // NATS slow or down: the consumer says so if it lasts
	}
	info := st.CachedInfo()
	if info.Created.UTC().Format(time.RFC3339Nano) != f.idx.Stream() || info.State.LastSeq < f.idx.Applied() {
		return fmt.Errorf("%s was created anew: indexing it from its start", LogStream)
	}
	return nil
}

// prune deletes the index's generations that the stream has dropped.
func (f *LogIndex) prune(ctx context.Context, first uint64) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if st, err := f.js.Stream(ctx, LogStream); err == nil {
		first = st.CachedInfo().State.FirstSeq
	}
	if err := f.idx.Prune(first); err != nil {
		f.log.Warn("delivery log index: prune", "err", err)
	}
}

// catchUp waits (at most indexCatchUp) until the index holds every record
// up to last.
func (f *LogIndex) catchUp(ctx context.Context, last uint64) {
	ctx, cancel := context.WithTimeout(ctx, indexCatchUp)
	defer cancel()
	f.idx.Wait(ctx, last)
}

// errNoIndex is a lookup of a reader without an index.
var errNoIndex = errors.New("delivery log: no index of " + LogStream + " in this process")

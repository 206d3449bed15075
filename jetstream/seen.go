package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/bits"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// HOOKJET_SEEN: the ids accepted by every hookjet process of a deployment,
// kept for dedupe.ttl so that a copy arriving after JetStream's duplicate
// window is still recognised, by whichever process gets it.
//
// Accepted ids are gathered for at most seenBatchWait (or seenBatchMax ids)
// into one message on one of two shared subjects,
//
//	hookjet.seen.events    event ids the fan-out accepted
//	hookjet.seen.inbound   provider ids the inbound gateway stored (their
//	                       ledger keys)
//
// whose body is "*<count>\n" and then, for each id, "<seq> <length>
// <id>\n" (earlier versions wrote one id a message, "<seq>\n<id>", which
// is still read). A message per id was a replicated write and a delivery
// to every process's follower per event; a batch is one for hundreds.
// They are published asynchronously (never waited for), and every process follows
// the stream with an ordered consumer into its own dedupe ledger (bbolt,
// package dedupe), so a lookup is a local read: no JetStream round trip per
// event. Two shared subjects cost the NATS servers a few bytes of heap per
// id, where a KV key per id (the buckets HOOKJET_SEEN and
// HOOKJET_INBOUND_SEEN of earlier versions) cost about 180 bytes each on
// every replica (JETSTREAM.md, "Memory per stored message").
//
// What this trades: between two processes an id is known once its
// announcement has been stored and followed, milliseconds after it was
// accepted; JetStream's own Nats-Msg-Id window (streams.duplicate_window,
// minutes) covers a copy published within it. A copy published after the
// window and fanned out by another process within those milliseconds of the
// first copy (possible only when both wait in a fan-out backlog, after
// downtime) is delivered twice.
const (
	SeenStream  = "HOOKJET_SEEN"
	SeenPrefix  = "hookjet.seen."
	SeenEvents  = SeenPrefix + "events"
	SeenInbound = SeenPrefix + "inbound"
)

// SeenDesignRate is the event rate HOOKJET_SEEN is sized for, per second:
// 10 million events a day, with room for twice as many.
const SeenDesignRate = 2 * 10_000_000.0 / 86400

// seenBytesPerID is what one remembered id costs HOOKJET_SEEN on disk (the
// id, its sequence, the message's framing), measured generously.
const seenBytesPerID = 256

// SeenBytes sizes HOOKJET_SEEN for dedupe.ttl at the design rate, at least
// 1 GiB. A full stream drops its oldest ids (Discard: Old): a copy of one
// of those would be delivered again, never refused.
func SeenBytes(ttl time.Duration) int64 {
	ids := SeenDesignRate * ttl.Seconds()
	return max(1<<30, int64(ids*seenBytesPerID))
}

// seenStreamConfig is HOOKJET_SEEN: limits retention for dedupe.ttl.
func seenStreamConfig(cfg *config.Config) natsjs.StreamConfig {
	return natsjs.StreamConfig{
		Name:        SeenStream,
		Description: "hookjet ids already accepted, shared by all processes (dedupe past the duplicate window), on shared subjects",
		Subjects:    []string{SeenPrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    cfg.Streams.Replicas,
		MaxAge:      cfg.Dedupe.TTL,
		MaxBytes:    SeenBytes(cfg.Dedupe.TTL),
		Discard:     natsjs.DiscardOld,
	}
}

// SeenLedger is the local store the followed ids go to (package dedupe's
// Ledger).
type SeenLedger interface {
	FirstSeen(id string, seq uint64) (first uint64, dup bool, err error)
	Seen(id string) (seq uint64, found bool, err error)
	// StreamPosition is the stored position and the creation time of the
	// stream it was reached in (zero: unknown).
	StreamPosition(name string) (pos uint64, created time.Time, err error)
	SetPosition(name string, pos uint64, created time.Time) error
}

// SeenIDs announces the ids this process accepts on HOOKJET_SEEN and
// follows every process's announcements into its ledger. One goroutine,
// owned until Close.
type SeenIDs struct {
	pub    natsjs.JetStream // asynchronous announcements
	js     natsjs.JetStream
	ledger SeenLedger
	log    *slog.Logger

	announced, lost, applied atomic.Uint64

	// created is when the HOOKJET_SEEN that applied counts in was
	// created; owned by the follower's goroutine.
	created time.Time

	// batch holds the ids not yet published, per subject; a timer
	// publishes a batch seenBatchWait after its first id.
	mu    sync.Mutex
	batch map[string]*seenBatch

	stop context.CancelFunc
	done chan struct{}
	once sync.Once
}

// Bounds of the announcer and the follower.
const (
	seenMaxPending = 4096
	seenStallWait  = 5 * time.Millisecond
	// seenSaveEvery is how often the follower stores its position; it
	// stores the position applied one period before, whose records the
	// ledger's batcher has committed by then.
	seenSaveEvery = time.Second
	// seenBatchWait is how long an id waits for others to share its
	// message, seenBatchMax how many share one at most: an announcement
	// is milliseconds late, well within the duplicate window that covers
	// it meanwhile.
	seenBatchWait = 2 * time.Millisecond
	seenBatchMax  = 512
)

// seenBatch is the ids gathered for one message.
type seenBatch struct {
	n    int
	data []byte // the records, without the "*<count>\n" head
}

// OpenSeenIDs starts announcing into and following HOOKJET_SEEN, which
// [EnsureStreams] created.
func OpenSeenIDs(js natsjs.JetStream, ledger SeenLedger, log *slog.Logger) (*SeenIDs, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &SeenIDs{js: js, ledger: ledger, log: log, done: make(chan struct{}), batch: map[string]*seenBatch{}}
	pub, err := natsjs.New(js.Conn(),
		natsjs.WithPublishAsyncMaxPending(seenMaxPending),
		natsjs.WithPublishAsyncErrHandler(func(_ natsjs.JetStream, m *nats.Msg, err error) { s.lose(seenCount(m.Data), err) }),
		natsjs.WithPublishAsyncAckHandler(func(_ natsjs.JetStream, m *nats.Msg, _ *natsjs.PubAck) {
			s.announced.Add(uint64(seenCount(m.Data)))
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", SeenStream, err)
	}
	s.pub = pub
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	go s.run(ctx)
	return s, nil
}

// Announce tells every process that key was accepted as sequence seq. It
// never waits for the server: the id goes out with the others announced
// within seenBatchWait, and a full queue of announcements drops them
// (counted in Lost; within the duplicate window NATS still dedupes).
func (s *SeenIDs) Announce(subject, key string, seq uint64) {
	s.mu.Lock()
	b := s.batch[subject]
	if b == nil {
		b = &seenBatch{data: make([]byte, 0, 4096)}
		s.batch[subject] = b
		time.AfterFunc(seenBatchWait, func() { s.publish(subject, b) })
	}
	b.n++
	b.data = strconv.AppendUint(b.data, seq, 10)
	b.data = append(b.data, ' ')
	b.data = strconv.AppendInt(b.data, int64(len(key)), 10)
	b.data = append(b.data, ' ')
	b.data = append(append(b.data, key...), '\n')
	full := b.n >= seenBatchMax
	s.mu.Unlock()
	if full {
		s.publish(subject, b)
	}
}

// publish sends b, unless it has been sent (by its timer or because it
// filled up).
func (s *SeenIDs) publish(subject string, b *seenBatch) {
	s.mu.Lock()
	if s.batch[subject] != b {
		s.mu.Unlock()
		return
	}
	delete(s.batch, subject)
	s.mu.Unlock()
	data := strconv.AppendInt(append(make([]byte, 0, len(b.data)+12), '*'), int64(b.n), 10)
	data = append(append(data, '\n'), b.data...)
	if _, err := s.pub.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data}, natsjs.WithStallWait(seenStallWait)); err != nil {
		s.lose(b.n, err)
	}
}

// publishAll sends every batch gathered so far.
func (s *SeenIDs) publishAll() {
	s.mu.Lock()
	batches := maps.Clone(s.batch)
	s.mu.Unlock()
	for subject, b := range batches {
		s.publish(subject, b)
	}
}

// seenCount is how many ids a HOOKJET_SEEN message announces.
func seenCount(data []byte) int {
	head, _, ok := bytes.Cut(data, []byte{'\n'})
	if !ok || len(head) < 2 || head[0] != '*' {
		return 1 // one id a message, as earlier versions wrote
	}
	n, err := strconv.Atoi(string(head[1:]))
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// seenRecords calls fn for each id and sequence in a HOOKJET_SEEN
// message, in either form; it stops at the first malformed record.
func seenRecords(data []byte, fn func(key string, seq uint64)) {
	head, rest, ok := bytes.Cut(data, []byte{'\n'})
	if !ok {
		return
	}
	if len(head) == 0 || head[0] != '*' {
		if seq, err := strconv.ParseUint(string(head), 10, 64); err == nil && len(rest) > 0 {
			fn(string(rest), seq)
		}
		return
	}
	for len(rest) > 0 {
		seqText, after, ok1 := bytes.Cut(rest, []byte{' '})
		lenText, after, ok2 := bytes.Cut(after, []byte{' '})
		seq, err1 := strconv.ParseUint(string(seqText), 10, 64)
		n, err2 := strconv.Atoi(string(lenText))
		if !ok1 || !ok2 || err1 != nil || err2 != nil || n < 1 || n >= len(after) || after[n] != '\n' {
			return
		}
		fn(string(after[:n]), seq)
		rest = after[n+1:]
	}
}

// lose counts n announcements that were not stored, with a warning each
// time the count passes a power of two.
func (s *SeenIDs) lose(n int, err error) {
	before := s.lost.Add(uint64(n)) - uint64(n)
	if bits.Len64(before) != bits.Len64(before+uint64(n)) {
		s.log.Warn("ids not announced in "+SeenStream+": a copy sent again after the duplicate window to another process would be taken again", "lost", before+uint64(n), "err", err)
	}
}

// Announced is the number of announcements the server stored; Lost those
// it did not (or that were dropped); Applied the last HOOKJET_SEEN
// sequence this process has applied to its ledger.
func (s *SeenIDs) Announced() uint64 { return s.announced.Load() }
func (s *SeenIDs) Lost() uint64      { return s.lost.Load() }
func (s *SeenIDs) Applied() uint64   { return s.applied.Load() }

// Seen looks key up in the local ledger.
func (s *SeenIDs) Seen(key string) (uint64, bool, error) { return s.ledger.Seen(key) }

// Remember records key as accepted under seq in the local ledger.
func (s *SeenIDs) Remember(key string, seq uint64) error {
	_, _, err := s.ledger.FirstSeen(key, seq)
	return err
}

// Flush waits until every announcement made so far is stored, or ctx ends.
func (s *SeenIDs) Flush(ctx context.Context) error {
	s.publishAll()
	select {
	case <-s.pub.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d announcements to %s not acknowledged: %w", s.pub.PublishAsyncPending(), SeenStream, ctx.Err())
	}
}

// Close waits briefly for the announcements in flight, stops following and
// stores the follower's position.
func (s *SeenIDs) Close() {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.Flush(ctx)
		cancel()
		s.stop()
		<-s.done
	})
}

func (s *SeenIDs) run(ctx context.Context) {
	defer close(s.done)
	keepFollowing(ctx, s.log, "following "+SeenStream, s.follow)
}

// follow applies HOOKJET_SEEN to the ledger from the position after the
// stored one, storing its position every seenSaveEvery and at the end.
func (s *SeenIDs) follow(ctx context.Context) error {
	start, err := s.resume(ctx)
	if err != nil {
		return err
	}
	saver := newPositionSaver(s, s.created)
	defer saver.stop()
	return readFrom(ctx, s.js, SeenStream, start, s.sameStream, func(m natsjs.Msg, seq uint64) error {
		seenRecords(m.Data(), func(key string, at uint64) {
			if _, _, err := s.ledger.FirstSeen(key, at); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Debug("remember a followed id", "err", err)
			}
		})
		s.applied.Store(seq)
		return nil
	})
}

// resume returns the sequence to follow HOOKJET_SEEN from: after the
// position applied (or stored), or from the start when the stream there
// now is another one than the position was reached in: created at another
// time (deleted and created anew), or holding fewer messages.
func (s *SeenIDs) resume(ctx context.Context) (uint64, error) {
	pos, created := s.applied.Load(), s.created
	if pos == 0 {
		p, c, err := s.ledger.StreamPosition(SeenStream)
		if err != nil {
			return 0, err
		}
		pos, created = p, c
	}
	st, err := s.js.Stream(ctx, SeenStream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", SeenStream, err)
	}
	info := st.CachedInfo()
	// A position stored without its stream's creation time (by an earlier
	// version) is taken as this stream's when the stream is long enough.
	if info.State.LastSeq < pos || (!created.IsZero() && !created.Equal(info.Created)) {
		if pos > 0 {
			s.log.Info(SeenStream+" was created anew: following it from its start", "position", pos)
		}
		pos = 0 // another stream than the one followed before
	}
	s.created = info.Created
	s.applied.Store(pos)
	return pos + 1, nil
}

// sameStream returns an error when HOOKJET_SEEN is not the stream followed
// so far (created at another time, or holding fewer messages than were
// followed): it was created anew, and is followed from its start (an
// ordered consumer would carry on from the old stream's sequence).
func (s *SeenIDs) sameStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := s.js.Stream(ctx, SeenStream)
	if err != nil {
		return nil // NATS slow or down: the consumer says so if it lasts
	}
	info := st.CachedInfo()
	if info.State.LastSeq < s.applied.Load() || !info.Created.Equal(s.created) {
		s.applied.Store(0)
		s.created = time.Time{}
		return fmt.Errorf("%s was created anew: following it from its start", SeenStream)
	}
	return nil
}

// positionSaver stores the follower's position every seenSaveEvery: the
// position of the tick before, so that what it covers is committed.
type positionSaver struct {
	s       *SeenIDs
	created time.Time // the stream followed
	quit    chan struct{}
	done    chan struct{}
}

func newPositionSaver(s *SeenIDs, created time.Time) *positionSaver {
	p := &positionSaver{s: s, created: created, quit: make(chan struct{}), done: make(chan struct{})}
	go p.run()
	return p
}

func (p *positionSaver) run() {
	defer close(p.done)
	t := time.NewTicker(seenSaveEvery)
	defer t.Stop()
	var prev, saved uint64
	for {
		select {
		case <-p.quit:
			return
		case <-t.C:
		}
		if prev > saved {
			if err := p.s.ledger.SetPosition(SeenStream, prev, p.created); err != nil {
				p.s.log.Warn("store the position in "+SeenStream, "err", err)
			} else {
				saved = prev
			}
		}
		prev = p.s.applied.Load()
	}
}

func (p *positionSaver) stop() {
	close(p.quit)
	<-p.done
}

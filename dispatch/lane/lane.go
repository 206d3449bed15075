package lane

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// Owner is this process's part in the ordered lane: it seeks the lane's
// lease (lease.go) and, while it holds it, owns the lane for a term: it
// reads HOOKJET_ORDERED into its keys and has their first entries attempted
// in turn. In every process it answers the fan-out's Reserve and Enqueue,
// and the views (view.go).
//
// The Owner's state is one table of keys under one lock; the parts that work
// on it are types of their own, each in its file with its job, sharing the
// lock (a method's doc says when it must be held) rather than each an actor
// of its own, so that a key moves from one to the next under one lock:
//   - floorGate (floor.go): the ack floor's barrier, state only;
//   - tally (bound.go): each endpoint's entries counted toward its bounds,
//     state only;
//   - runner (run.go): the attempts of keys' first entries, per endpoint,
//     handed to the Engine, and their settlement;
//   - remover (remove.go): settled entries out of the stream, mostly by one
//     purge for many;
//   - mover (move.go): a waiting key's entries stored again behind the
//     others, so that the purge passes it;
//   - the lease (lease.go) and the views (view.go) are the Owner's own.
//
// The Owner itself reads the stream into the keys (term.go: the feed) and
// decides which key's first entry may go (consider).
type Owner struct {
	eng Engine
	o   Options
	log *slog.Logger

	mu    sync.Mutex
	gen   uint64 // ownership term: state of an earlier term is ignored
	owner bool
	keys  map[laneKeyID]*laneKey
	byEp  map[string]map[string]*laneKey // the same keys, per endpoint
	// own holds the stream sequences of entries this process stored
	// while owner and the feed has not read yet: the feed skips them.
	own map[uint64]struct{}

	gate  floorGate // the ack floor's barrier (floor.go)
	tally tally     // each endpoint's entries, toward its bounds (bound.go)
	rn    runner    // the keys' attempts (run.go)
	rm    remover   // settled entries out of the stream (remove.go)
	mv    mover     // waiting keys' entries behind the others (move.go)

	// reported are the metric labels last reported with held keys.
	reported map[string]bool

	st     natsjs.Stream   // HOOKJET_ORDERED, for the term
	ctx    context.Context // the term's: cancelled when ownership ends
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type laneKeyID struct{ ep, key string }

// laneKey is one endpoint's ordering key with entries waiting.
type laneKey struct {
	id      laneKeyID
	entries []*laneEntry // sorted: front entries first, then by order
	// busy: cur, its first entry when it was queued, is queued, in
	// flight or being stored again; nothing else of the key may start.
	busy  bool
	cur   *laneEntry
	timer *time.Timer
	// why and since say why the key waits when it is held: retrying,
	// dead_letter, or the endpoint's admission cause.
	why   string
	since time.Time
	// unremoved counts the originals of entries moved behind the key
	// (move.go) still in the stream: the key waits for them.
	unremoved int
}

// laneEntry is one delivery waiting in HOOKJET_ORDERED.
type laneEntry struct {
	seq   uint64 // its HOOKJET_ORDERED sequence
	front bool   // a replay or a hold marker: before the key's events
	order uint64 // HOOKJET_EVENTS sequence (front entries: their first entry's lane seq)
	id    string // event id
	hold  bool   // a hold marker: the key waits for its dead letter
	tries int
	due   time.Time
	first time.Time // when it was first appended: held since
	size  int64     // its message's size, about
	msg   *keptMsg  // the entry's message, when kept in memory
}

// keptMsg is a lane entry's message as read (or stored) by the owner, and
// about its size in memory (0: not counted).
type keptMsg struct {
	Msg
	size int
}

// Lane entry headers, besides the task ones.
const (
	hdrLaneFront   = "Hookjet-Ordered-Front"   // "1": a replay, before the key's events
	hdrLaneHold    = "Hookjet-Ordered-Hold"    // a hold marker: the dead-lettered event's id
	hdrLaneRelease = "Hookjet-Ordered-Release" // releases the hold marker of this event id
	hdrLaneDue     = "Hookjet-Ordered-Due"     // RFC 3339: not attempted before
	// hdrLaneOrder on a replay stored again for its retry is the place
	// among the key's replays it had (its first entry's sequence), so a
	// retry does not put it behind the replays stored after it.
	hdrLaneOrder = "Hookjet-Ordered-Order"
)

// New makes this process's part in the ordered lane; RunLease starts it.
func New(eng Engine, o Options) *Owner {
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Sends == nil {
		o.Sends = context.Background()
	}
	if o.Busy == nil {
		o.Busy = func(string) bool { return false }
	}
	l := &Owner{eng: eng, o: o, log: o.Log, keys: map[laneKeyID]*laneKey{}, byEp: map[string]map[string]*laneKey{}, own: map[uint64]struct{}{},
		gate: newFloorGate(), tally: newTally(o)}
	l.rn = runner{l: l, ready: map[string][]*laneKey{}, running: map[string]bool{}}
	l.rm = remover{l: l, live: map[uint64]*laneKey{}, kick: make(chan struct{}, 1)}
	l.mv = mover{l: l, moving: map[uint64]struct{}{}, blocked: map[*laneKey]struct{}{}}
	return l
}

func (l *Owner) now() time.Time { return l.o.Now() }

// Into makes m, a task of an event with ordering key key to endpoint, an
// entry of the ordered lane: its subject, the key, and a Nats-Msg-Id of the
// endpoint, the event and attempts, so that storing it twice stores it once.
// The event's key (Hookjet-Event-Key) is m's.
func Into(m *nats.Msg, endpoint, key string, attempts int) {
	m.Subject = jetstream.LanePrefix + endpoint
	m.Header.Set(jetstream.HdrMsgID, "ord-"+endpoint+"-"+m.Header.Get(jetstream.HdrEventKey)+"-"+strconv.Itoa(attempts))
	m.Header.Set(jetstream.HdrOrderingKey, key)
}

// Front makes m, an entry (Into), a front entry: a replay, which goes
// before its key's waiting events and releases the key's hold on it.
func Front(m *nats.Msg) { m.Header.Set(hdrLaneFront, "1") }

// SetDue has entry m not attempted before due (zero: at once).
func SetDue(m *nats.Msg, due time.Time) {
	if !due.IsZero() {
		m.Header.Set(hdrLaneDue, due.UTC().Format(time.RFC3339Nano))
	}
}

// Release is the message that releases the hold on its key of the dead
// letter of event eventID at endpoint (its dead letter was discarded).
func Release(endpoint, eventID string) *nats.Msg {
	m := nats.NewMsg(jetstream.LanePrefix + endpoint)
	m.Header.Set(jetstream.HdrEndpoint, endpoint)
	m.Header.Set(hdrLaneRelease, eventID)
	return m
}

// Reservation is room an entry this process's fan-out stores takes in its
// endpoint's bounds until the feed reads it (Reserve, Enqueue).
type Reservation = laneAhead

// Enqueue stores m, an entry (Into) that r reserved room for, and ends the
// reservation once the feed reads it. Full(err): the lane refused it for
// its limits.
func (l *Owner) Enqueue(r Reservation, m *nats.Msg) error {
	ctx, cancel := context.WithTimeout(l.o.Sends, 5*time.Second)
	defer cancel()
	var seq uint64
	ack, err := l.o.JS.PublishMsg(ctx, m)
	if err == nil {
		seq = ack.Sequence
	}
	l.landed(r, seq)
	return err
}

// jsErrStoreFailed is nats-server's JSStreamStoreFailedF, the error of a
// stream at its limits with Discard: New ("maximum bytes exceeded",
// "maximum messages exceeded"); nats.go has no name for it.
const jsErrStoreFailed natsjs.ErrorCode = 10077

// Full reports whether err is HOOKJET_ORDERED refusing an entry for its
// limits.
func Full(err error) bool {
	var apiErr *natsjs.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrStoreFailed
}

// entryOf reads a lane entry's sorting facts from its message.
func entryOf(seq uint64, h nats.Header, at time.Time) (laneEntry, string) {
	e := laneEntry{seq: seq, order: seq, first: at, id: h.Get(jetstream.HdrEventID)}
	e.front = h.Get(hdrLaneFront) != ""
	if v := h.Get(hdrLaneHold); v != "" {
		e.front, e.hold, e.id = true, true, v
	}
	if !e.front {
		e.order, _ = strconv.ParseUint(h.Get(jetstream.HdrEventSeq), 10, 64)
	} else if o, err := strconv.ParseUint(h.Get(hdrLaneOrder), 10, 64); err == nil && !e.hold {
		e.order = o
	}
	e.tries, _ = strconv.Atoi(h.Get(jetstream.HdrAttempts))
	if t, err := time.Parse(time.RFC3339Nano, h.Get(hdrLaneDue)); err == nil {
		e.due = t
	}
	if t, err := time.Parse(time.RFC3339Nano, h.Get(jetstream.HdrPublished)); err == nil && !e.front {
		e.first = t
	}
	if t, err := time.Parse(time.RFC3339Nano, h.Get(hdrLaneSince)); err == nil && e.hold {
		e.first = t // a moved hold marker (move.go)
	}
	return e, h.Get(jetstream.HdrOrderingKey)
}

// less orders a key's entries: front entries first (by the sequence
// of their first entry), then the events by their sequence.
func (a *laneEntry) less(b *laneEntry) bool {
	if a.front != b.front {
		return a.front
	}
	if a.order != b.order {
		return a.order < b.order
	}
	return a.seq < b.seq
}

// insert adds e to k in order. An entry of the same event already there
// (stored again after a failed attempt, and a crash before the old one was
// deleted; or appended twice past the duplicate window) keeps the one with
// more attempts: the other is returned to be removed (nil: none).
func (k *laneKey) insert(e *laneEntry) (drop *laneEntry) {
	for i, o := range k.entries {
		if o.hold == e.hold && o.front == e.front && (e.front && o.id == e.id || !e.front && o.order == e.order) {
			if e.tries > o.tries {
				k.entries[i] = e
				return o
			}
			return e
		}
	}
	i, _ := slices.BinarySearchFunc(k.entries, e, func(a, b *laneEntry) int {
		if a.less(b) {
			return -1
		}
		return 1
	})
	k.entries = slices.Insert(k.entries, i, e)
	return nil
}

// remove drops the entry with stream sequence seq from k and reports
// whether it was there.
func (k *laneKey) remove(seq uint64) bool {
	n := len(k.entries)
	k.entries = slices.DeleteFunc(k.entries, func(e *laneEntry) bool { return e.seq == seq })
	return len(k.entries) < n
}

// deleteEntry removes lane entry seq from the stream; one already gone is
// fine.
func deleteEntry(ctx context.Context, st natsjs.Stream, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := st.DeleteMsg(ctx, seq)
	if err == nil || isNotFound(err) {
		return nil
	}
	return err
}

func isNotFound(err error) bool {
	return err != nil && (errors.Is(err, natsjs.ErrMsgNotFound) || strings.Contains(err.Error(), "no message found"))
}

// Owns reports whether this process owns the lane now.
func (l *Owner) Owns() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.owner
}

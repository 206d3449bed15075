package jetstream

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/state"
)

// seenProcess is one hookjet process's part of HOOKJET_SEEN: a connection
// of its own, a ledger in a state file of its own, and its SeenIDs.
type seenProcess struct {
	js     natsjs.JetStream
	ledger *dedupe.Ledger
	seen   *SeenIDs
	close  func()
}

// startSeenJS starts a server with hookjet's streams and HOOKJET_INBOUND,
// with a duplicate window of window (0: the default).
func startSeenJS(t *testing.T, window time.Duration) natsjs.JetStream {
	t.Helper()
	js := startJS(t)
	cfg := config.Default()
	if window > 0 {
		cfg.Streams.DuplicateWindow = window
	}
	if err := EnsureStreams(context.Background(), js, &cfg, nil); err != nil {
		t.Fatal(err)
	}
	if err := EnsureInbound(context.Background(), js, &cfg, nil); err != nil {
		t.Fatal(err)
	}
	return js
}

// openSeenProcess connects to url as a process with its state in dir.
func openSeenProcess(t *testing.T, url, dir string) *seenProcess {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	db, err := state.Open(filepath.Join(dir, "state.db"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ledger, err := dedupe.NewLedger(db, time.Hour, dedupe.WithBatch(100, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); ledger.Run(ctx) }()
	seen, err := OpenSeenIDs(js, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &seenProcess{js: js, ledger: ledger, seen: seen}
	var closed bool
	p.close = func() {
		if closed {
			return
		}
		closed = true
		seen.Close()
		cancel()
		<-ran
		_ = db.Close()
		nc.Close()
	}
	t.Cleanup(p.close)
	return p
}

// waitApplied waits until p has followed HOOKJET_SEEN up to seq.
func (p *seenProcess) waitApplied(t *testing.T, seq uint64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for p.seen.Applied() < seq {
		if time.Now().After(deadline) {
			t.Fatalf("followed HOOKJET_SEEN up to %d, want %d", p.seen.Applied(), seq)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSeenAcrossProcessesPastTheWindow runs two processes (connections,
// ledgers) on one server with a duplicate window of 1 s: an event id the
// first accepted is a duplicate for the second, and an inbound event the
// first stored is a duplicate at the second after the window, stored once;
// after the second process restarts it still knows both, and it resumes
// following after the position it stored.
func TestSeenAcrossProcessesPastTheWindow(t *testing.T) {
	js := startSeenJS(t, time.Second)
	ctx := context.Background()
	url := js.Conn().ConnectedUrl()
	a, bDir := openSeenProcess(t, url, t.TempDir()), t.TempDir()
	b := openSeenProcess(t, url, bDir)

	// The fan-out's ids: a accepts evt_1 as sequence 7 and announces it.
	if _, dup, err := a.ledger.FirstSeen("evt_1", 7); err != nil || dup {
		t.Fatalf("a: FirstSeen = %v, %v", dup, err)
	}
	a.seen.Announce(SeenEvents, "evt_1", 7)
	b.waitApplied(t, 1)
	if first, dup, err := b.ledger.FirstSeen("evt_1", 9); err != nil || !dup || first != 7 {
		t.Fatalf("b: the copy at 9 is dup %v (first %d, %v), want a duplicate of 7", dup, first, err)
	}

	// The inbound gateway's ids.
	sa, sb := OpenInboundStore(a.js, a.seen, 0, nil), OpenInboundStore(b.js, b.seen, 0, nil)
	ev := InboundEvent{Source: "stripe", ID: "evt_once", Type: "charge.succeeded", Body: []byte(`{}`), ReceivedAt: time.Now()}
	got, err := sa.Store(ctx, ev)
	if err != nil || got.Duplicate {
		t.Fatalf("a: first store %+v, %v", got, err)
	}
	if err := sa.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // past the duplicate window
	b.waitApplied(t, 2)
	again, err := sb.Store(ctx, ev)
	if err != nil || !again.Duplicate || again.Seq != got.Seq {
		t.Fatalf("b: the copy after the window: %+v, %v; want a duplicate of %d", again, err, got.Seq)
	}
	st, err := js.Stream(ctx, InboundStream)
	if err != nil {
		t.Fatal(err)
	}
	if n := st.CachedInfo().State.Msgs; n != 1 {
		t.Errorf("%s holds %d copies, want 1", InboundStream, n)
	}

	// b restarts: it knows both ids from its ledger, and follows on from
	// its stored position (an id announced while it was down arrives).
	deadline := time.Now().Add(10 * time.Second)
	for pos, _ := b.ledger.Position(SeenStream); pos < 2; pos, _ = b.ledger.Position(SeenStream) {
		if time.Now().After(deadline) {
			t.Fatalf("b stored position %d, want 2", pos)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.close()
	a.seen.Announce(SeenEvents, "evt_2", 11)
	if err := a.seen.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b = openSeenProcess(t, url, bDir)
	b.waitApplied(t, 3)
	for _, c := range []struct {
		id  string
		seq uint64
	}{{"evt_1", 7}, {"evt_2", 11}} {
		if seq, found, err := b.ledger.Seen(c.id); err != nil || !found || seq != c.seq {
			t.Errorf("b after a restart: %s seen %v at %d (%v), want %d", c.id, found, seq, err, c.seq)
		}
	}
	if again, err := OpenInboundStore(b.js, b.seen, 0, nil).Store(ctx, ev); err != nil || !again.Duplicate {
		t.Errorf("b after a restart: the inbound copy %+v, %v; want a duplicate", again, err)
	}
	if a.seen.Lost() != 0 || b.seen.Lost() != 0 {
		t.Errorf("announcements lost: %d, %d", a.seen.Lost(), b.seen.Lost())
	}
}

// A HOOKJET_SEEN message carries many ids, in either form: the batches
// this version writes and the one id a message of earlier versions; a
// malformed record ends the reading, nothing after it is taken.
func TestSeenRecordsReadBothForms(t *testing.T) {
	type rec struct {
		key string
		seq uint64
	}
	read := func(data string) []rec {
		var out []rec
		seenRecords([]byte(data), func(key string, seq uint64) { out = append(out, rec{key, seq}) })
		return out
	}
	key := "\x00in.github.a b\nc" // spaces and a newline in a key
	batch := "*3\n7 5 evt_1\n9 " + strconv.Itoa(len(key)) + " " + key + "\n12 5 evt_2\n"
	if got, want := read(batch), []rec{{"evt_1", 7}, {key, 9}, {"evt_2", 12}}; !slices.Equal(got, want) {
		t.Errorf("batch: %v, want %v", got, want)
	}
	if n := seenCount([]byte(batch)); n != 3 {
		t.Errorf("seenCount(batch) = %d, want 3", n)
	}
	if got, want := read("42\nevt_old"), []rec{{"evt_old", 42}}; !slices.Equal(got, want) {
		t.Errorf("one id a message: %v, want %v", got, want)
	}
	if n := seenCount([]byte("42\nevt_old")); n != 1 {
		t.Errorf("seenCount(one id) = %d, want 1", n)
	}
	if got, want := read("*2\n7 5 evt_1\n9 50 short\n"), []rec{{"evt_1", 7}}; !slices.Equal(got, want) {
		t.Errorf("a record whose length runs past the end: %v, want %v", got, want)
	}
}

// Ids announced together share a message, and each one reaches another
// process's ledger; Announced counts ids, not messages.
func TestSeenIDsAnnouncedTogetherShareAMessage(t *testing.T) {
	js := startSeenJS(t, 0)
	ctx := context.Background()
	url := js.Conn().ConnectedUrl()
	a, b := openSeenProcess(t, url, t.TempDir()), openSeenProcess(t, url, t.TempDir())
	const n = 1000
	for i := range n {
		a.seen.Announce(SeenEvents, "evt_"+strconv.Itoa(i), uint64(i+1))
	}
	if err := a.seen.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := a.seen.Announced(); got != n {
		t.Fatalf("Announced = %d, want %d", got, n)
	}
	st, err := js.Stream(ctx, SeenStream)
	if err != nil {
		t.Fatal(err)
	}
	msgs := st.CachedInfo().State.Msgs
	if msgs > n/seenBatchMax+10 {
		t.Errorf("%d ids took %d messages", n, msgs)
	}
	b.waitApplied(t, st.CachedInfo().State.LastSeq)
	for i := range n {
		if seq, found, err := b.ledger.Seen("evt_" + strconv.Itoa(i)); err != nil || !found || seq != uint64(i+1) {
			t.Fatalf("b: evt_%d seen %v at %d (%v)", i, found, seq, err)
		}
	}
}

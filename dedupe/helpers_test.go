package dedupe_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/state"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixture is a ledger on a real file with its batcher running.
type fixture struct {
	path   string
	db     *bolt.DB
	clock  *testkit.Clock
	ttl    time.Duration
	opts   []dedupe.Option
	ledger *dedupe.Ledger
	cancel context.CancelFunc
	done   chan struct{}
}

func newFixture(tb testing.TB, ttl time.Duration, opts ...dedupe.Option) *fixture {
	tb.Helper()
	f := &fixture{
		path:  filepath.Join(tb.TempDir(), "state.db"),
		clock: testkit.NewClock(),
		ttl:   ttl,
	}
	f.opts = append([]dedupe.Option{dedupe.WithClock(f.clock.Now)}, opts...)
	f.start(tb)
	tb.Cleanup(func() {
		f.stop()
		testkit.CloseDB(tb, f.db)
	})
	return f
}

// start opens the file if needed, creates a ledger and runs its batcher.
func (f *fixture) start(tb testing.TB) {
	tb.Helper()
	if f.db == nil || f.db.Path() == "" {
		db, err := state.Open(f.path, time.Second)
		if err != nil {
			tb.Fatalf("open state: %v", err)
		}
		f.db = db
	}
	l, err := dedupe.NewLedger(f.db, f.ttl, f.opts...)
	if err != nil {
		tb.Fatalf("NewLedger: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.ledger, f.cancel, f.done = l, cancel, make(chan struct{})
	go func() {
		defer close(f.done)
		l.Run(ctx)
	}()
}

// stop shuts the batcher down and waits for it.
func (f *fixture) stop() {
	if f.cancel != nil {
		f.cancel()
		<-f.done
		f.cancel = nil
	}
}

// restart stops the ledger, closes and reopens the file and starts again.
func (f *fixture) restart(tb testing.TB) {
	tb.Helper()
	f.stop()
	testkit.CloseDB(tb, f.db)
	f.start(tb)
}

// markDelivered calls MarkDelivered and waits for its callback.
func (f *fixture) markDelivered(tb testing.TB, endpoint, eventID string) {
	tb.Helper()
	errc := make(chan error, 1)
	f.ledger.MarkDelivered(endpoint, eventID, func(err error) { errc <- err })
	if err := <-errc; err != nil {
		tb.Fatalf("MarkDelivered(%q, %q): %v", endpoint, eventID, err)
	}
}

// keys returns the keys of bucket in the file, as strings.
func (f *fixture) keys(tb testing.TB, bucket string) []string {
	tb.Helper()
	var keys []string
	err := f.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucket)).ForEach(func(k, _ []byte) error {
			keys = append(keys, string(bytes.Clone(k)))
			return nil
		})
	})
	if err != nil {
		tb.Fatalf("read %s: %v", bucket, err)
	}
	return keys
}

package breaker_test

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hookjet/hookjet/state"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// clock is a manual clock for WithClock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// tempPath returns a state file path in a fresh temporary directory.
func tempPath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "state.db")
}

// openDB opens the state file at path and, when the test ends, checks its
// integrity and closes it (unless the test closed it already).
func openDB(tb testing.TB, path string) *bolt.DB {
	tb.Helper()
	db, err := state.Open(path, time.Second)
	if err != nil {
		tb.Fatalf("open state: %v", err)
	}
	tb.Cleanup(func() { closeDB(tb, db) })
	return db
}

// closeDB checks db's integrity and closes it; closing twice is harmless.
func closeDB(t testing.TB, db *bolt.DB) {
	t.Helper()
	if db.Path() == "" {
		return // already closed
	}
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			t.Errorf("integrity: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Errorf("integrity view: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

package testkit

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hookjet/hookjet/state"
	bolt "go.etcd.io/bbolt"
)

// TempPath returns the path of a state file in a fresh temporary directory.
func TempPath(tb testing.TB) string {
	tb.Helper()
	return filepath.Join(tb.TempDir(), "state.db")
}

// OpenDB opens the state file at path with [state.Open] and, when the test
// ends, checks its integrity and closes it (see [CloseDB]).
func OpenDB(tb testing.TB, path string) *bolt.DB {
	tb.Helper()
	db, err := state.Open(path, time.Second)
	if err != nil {
		tb.Fatalf("open state: %v", err)
	}
	tb.Cleanup(func() { CloseDB(tb, db) })
	return db
}

// CloseDB runs bbolt's consistency check (tx.Check) on db, reports every
// problem as a test error, and closes db. A nil or already closed db is left
// alone, so a test may close a file itself, for example to reopen it.
func CloseDB(tb testing.TB, db *bolt.DB) {
	tb.Helper()
	if db == nil || db.Path() == "" {
		return
	}
	err := db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			tb.Errorf("integrity: %v", err)
		}
		return nil
	})
	if err != nil {
		tb.Errorf("integrity view: %v", err)
	}
	if err := db.Close(); err != nil {
		tb.Errorf("close: %v", err)
	}
}

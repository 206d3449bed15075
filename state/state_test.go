package state_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/state"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// openTemp opens a fresh state file and closes it, after an integrity check,
// when the test ends.
func openTemp(t *testing.T) (*bolt.DB, string) {
	t.Helper()
	path := testkit.TempPath(t)
	return testkit.OpenDB(t, path), path
}

func TestOpenRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	db, err := state.Open(path, time.Second)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	testkit.CloseDB(t, db)

	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode().Perm(); got != 0o600 {
		t.Errorf("file mode = %v, want 0600", got)
	}

	db, err = state.Open(path, time.Second)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer testkit.CloseDB(t, db)
	var got []byte
	err = db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		if b == nil {
			return errors.New("bucket missing")
		}
		got = bytes.Clone(b.Get([]byte("k")))
		return nil
	})
	if err != nil {
		t.Fatalf("View: %v", err)
	}
	if string(got) != "v" {
		t.Errorf("value = %q, want %q", got, "v")
	}
}

func TestOpenLocked(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
		min     time.Duration // the lock wait must last at least this
		max     time.Duration // and give up well before this
	}{
		// bbolt polls the lock every 50ms and gives up one poll early.
		{name: "explicit timeout", timeout: 200 * time.Millisecond, min: 150 * time.Millisecond, max: 1500 * time.Millisecond},
		{name: "zero means default", timeout: 0, min: state.DefaultTimeout - 50*time.Millisecond, max: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, path := openTemp(t)
			start := time.Now()
			db, err := state.Open(path, tt.timeout)
			elapsed := time.Since(start)
			if err == nil {
				_ = db.Close()
				t.Fatal("second Open succeeded, want ErrLocked")
			}
			if !errors.Is(err, state.ErrLocked) {
				t.Fatalf("err = %v, want ErrLocked", err)
			}
			if !errors.Is(err, bolterrors.ErrTimeout) {
				t.Errorf("err = %v, want it to wrap bolterrors.ErrTimeout", err)
			}
			if errors.Is(err, state.ErrCorrupt) {
				t.Errorf("err = %v also matches ErrCorrupt", err)
			}
			want := "state file " + path + " is locked by another process (is another hookjet using the same data_dir?)"
			if err.Error() != want {
				t.Errorf("message = %q, want %q", err, want)
			}
			if elapsed < tt.min || elapsed > tt.max {
				t.Errorf("gave up after %v, want between %v and %v", elapsed, tt.min, tt.max)
			}
		})
	}
}

func TestOpenCorrupt(t *testing.T) {
	tests := []struct {
		name   string
		damage func(t *testing.T, path string)
	}{
		{
			name: "garbage",
			damage: func(t *testing.T, path string) {
				writeFile(t, path, bytes.Repeat([]byte("not a bbolt file "), 1024))
			},
		},
		{
			name: "short garbage",
			damage: func(t *testing.T, path string) {
				writeFile(t, path, []byte("hello"))
			},
		},
		{
			name: "both meta pages zeroed",
			damage: func(t *testing.T, path string) {
				data := readFilledDB(t, path)
				pageSize := os.Getpagesize()
				clear(data[:2*pageSize])
				writeFile(t, path, data)
			},
		},
		{
			name: "leaf pages overwritten",
			damage: func(t *testing.T, path string) {
				data := readFilledDB(t, path)
				pageSize := os.Getpagesize()
				for i := 4 * pageSize; i < 12*pageSize; i++ {
					data[i] = byte(i*7 + 3)
				}
				writeFile(t, path, data)
			},
		},
		{
			name: "data pages overwritten",
			damage: func(t *testing.T, path string) {
				data := readFilledDB(t, path)
				pageSize := os.Getpagesize()
				// Keep both meta pages valid and scribble over everything
				// after them: bucket and leaf pages no longer parse.
				for i := 2 * pageSize; i < len(data); i++ {
					data[i] = byte(i*7 + 3)
				}
				writeFile(t, path, data)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.db")
			tt.damage(t, path)
			db, err := state.Open(path, time.Second)
			if err == nil {
				_ = db.Close()
				t.Fatal("Open succeeded on a corrupt file, want ErrCorrupt")
			}
			if !errors.Is(err, state.ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "state file "+path+" is corrupt (") ||
				!strings.HasSuffix(msg, "); stop hookjet and move the file aside to start with empty state") {
				t.Errorf("message = %q, want it to name the path and the remedy", msg)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message = %q spans several lines", msg)
			}
			t.Log(msg)

			// The failed Open must not keep the file locked: opening it
			// again reports the same corruption, not a lock held by us.
			db, err = state.Open(path, 100*time.Millisecond)
			if err == nil {
				_ = db.Close()
				t.Fatal("second Open succeeded on a corrupt file")
			}
			if !errors.Is(err, state.ErrCorrupt) || errors.Is(err, state.ErrLocked) {
				t.Fatalf("second Open: err = %v, want ErrCorrupt only", err)
			}

			// Once the file is moved aside, a fresh one opens at the path.
			if err := os.Rename(path, path+".corrupt"); err != nil {
				t.Fatal(err)
			}
			db, err = state.Open(path, 100*time.Millisecond)
			if err != nil {
				t.Fatalf("Open after moving the corrupt file aside: %v", err)
			}
			testkit.CloseDB(t, db)
		})
	}
}

func TestOpenMissingDirectory(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "state.db")
	db, err := state.Open(path, time.Second)
	if err == nil {
		_ = db.Close()
		t.Fatal("Open succeeded in a missing directory")
	}
	if errors.Is(err, state.ErrCorrupt) || errors.Is(err, state.ErrLocked) {
		t.Errorf("err = %v, want neither ErrCorrupt nor ErrLocked", err)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("err = %v, want it to wrap os.ErrNotExist", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want it to name %s", err, path)
	}
}

// readFilledDB creates a valid database at path holding enough data to span
// several pages and returns its bytes.
func readFilledDB(t *testing.T, path string) []byte {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("b"))
		if err != nil {
			return err
		}
		for i := range 2000 {
			key := []byte(strings.Repeat("k", 10) + string(rune('a'+i%26)) + time.Duration(i).String())
			if err := b.Put(key, bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

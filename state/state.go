package state

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/hookjet/hookjet/internal/durable"
)

const (
	// DefaultTimeout is how long Open waits for the file lock when given a
	// zero timeout.
	DefaultTimeout = 2 * time.Second

	// MaxCheckSize is the largest file Open runs the consistency check on;
	// larger files are opened without it to keep start-up fast.
	MaxCheckSize = 64 << 20

	// maxCheckErrors bounds how many consistency problems are reported.
	maxCheckErrors = 3
)

// Open opens the bbolt file at path, creating it with mode 0600 when it does
// not exist (bbolt fsyncs the new file; Open then fsyncs its directory), and
// checks it.
//
// A zero or negative timeout means DefaultTimeout. When another process holds
// the file lock for longer than timeout, the error wraps ErrLocked. When the
// file is not a bbolt database or fails bbolt's consistency check (run on
// files up to MaxCheckSize), the error wraps ErrCorrupt and tells the operator
// what to do. Both errors also wrap the bbolt cause when there is one.
//
// The check runs on a read-only handle before the file is opened for writing:
// bbolt panics on some damaged files, and a panic while the file is mapped
// would leave it locked for the rest of the process.
func Open(path string, timeout time.Duration) (*bolt.DB, error) {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	info, err := os.Stat(path)
	if err == nil && info.Size() > 0 && info.Size() <= MaxCheckSize {
		if err := precheck(path, timeout); err != nil {
			return nil, err
		}
	}
	db, oerr := open(path, &bolt.Options{Timeout: timeout})
	if oerr == nil && errors.Is(err, fs.ErrNotExist) {
		// bbolt fsyncs the new file; its name is durable once the
		// directory is too.
		if err := durable.SyncDir(filepath.Dir(path)); err != nil {
			_ = db.Close()
			return nil, fmt.Errorf("state file %s: %w", path, err)
		}
	}
	return db, oerr
}

// precheck opens path read-only, runs the consistency check and closes it.
func precheck(path string, timeout time.Duration) error {
	db, err := open(path, &bolt.Options{Timeout: timeout, ReadOnly: true})
	if err != nil {
		return err
	}
	checkErr := check(db)
	if err := db.Close(); err != nil && checkErr == nil {
		return fmt.Errorf("close state file %s after checking it: %w", path, err)
	}
	if checkErr != nil {
		return corrupt(path, checkErr)
	}
	return nil
}

// open wraps bolt.Open, turning its failures into the package's errors.
func open(path string, opts *bolt.Options) (db *bolt.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, corrupt(path, fmt.Errorf("%v", r))
		}
	}()
	db, err = bolt.Open(path, 0o600, opts)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, &openError{
			msg:      fmt.Sprintf("state file %s is locked by another process (is another hookjet using the same data_dir?)", path),
			sentinel: ErrLocked,
			cause:    err,
		}
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch),
		errors.Is(err, bolterrors.ErrChecksum), errors.Is(err, bolterrors.ErrInvalidMapping):
		return nil, corrupt(path, err)
	default:
		return nil, fmt.Errorf("open state file %s: %w", path, err)
	}
}

// check runs bbolt's consistency check and returns the first few problems.
// bbolt turns a panic inside the check into one of those problems.
func check(db *bolt.DB) error {
	var errs []error
	err := db.View(func(tx *bolt.Tx) error {
		// Drain the channel fully: the checker goroutine blocks otherwise.
		for err := range tx.Check() {
			if len(errs) < maxCheckErrors {
				errs = append(errs, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return errors.Join(errs...)
}

func corrupt(path string, cause error) error {
	return &openError{
		msg: fmt.Sprintf("state file %s is corrupt (%s); stop hookjet and move the file aside to start with empty state",
			path, strings.ReplaceAll(cause.Error(), "\n", "; ")),
		sentinel: ErrCorrupt,
		cause:    cause,
	}
}

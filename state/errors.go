package state

import "errors"

var (
	// ErrLocked is wrapped by the error Open returns when another process holds
	// the lock on the state file for longer than the lock timeout.
	ErrLocked = errors.New("state file locked")

	// ErrCorrupt is wrapped by the error Open returns when the file is not a
	// bbolt database or fails the consistency check.
	ErrCorrupt = errors.New("state file corrupt")
)

// openError carries an operator-facing message while matching both the
// package sentinel and the underlying cause with errors.Is and errors.As.
type openError struct {
	msg      string
	sentinel error
	cause    error
}

func (e *openError) Error() string { return e.msg }

func (e *openError) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

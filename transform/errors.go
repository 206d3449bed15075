package transform

import (
	"errors"
	"fmt"
)

// Sentinels, matched with errors.Is on an *Error (its Kind).
var (
	// ErrInvalid is a script Compile refused (size, syntax, no handler).
	ErrInvalid = errors.New("invalid transform")
	// ErrThrown is a script that threw.
	ErrThrown = errors.New("transform threw")
	// ErrTimeout is a run interrupted after Limits.Timeout (or its
	// context's end).
	ErrTimeout = errors.New("transform timed out")
	// ErrMemory is a run interrupted by the memory watchdog.
	ErrMemory = errors.New("transform used too much memory")
	// ErrBadReturn is a handler that returned something else than the
	// webhook object, or set a field it may not.
	ErrBadReturn = errors.New("transform returned a bad value")
)

// Field is the endpoint key a transform is set under.
const Field = "transform"

// Kind says why a transform failed.
type Kind int

// Kinds of Error.
const (
	KindInvalid Kind = iota
	KindThrown
	KindTimeout
	KindMemory
	KindBadReturn
)

func (k Kind) String() string {
	switch k {
	case KindInvalid:
		return "invalid"
	case KindThrown:
		return "thrown"
	case KindTimeout:
		return "timeout"
	case KindMemory:
		return "memory"
	case KindBadReturn:
		return "bad_return"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Error is a transform that failed: why, the script's message and where in
// the script (line and column from 1; 0 when unknown). Its message reads
// `transform: 3:11: TypeError: ...`.
type Error struct {
	Kind         Kind
	Message      string
	Line, Column int
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s: %d:%d: %s", Field, e.Line, e.Column, e.Message)
	}
	return fmt.Sprintf("%s: %s", Field, e.Message)
}

// Unwrap returns the sentinel of the error's Kind.
func (e *Error) Unwrap() error {
	switch e.Kind {
	case KindInvalid:
		return ErrInvalid
	case KindThrown:
		return ErrThrown
	case KindTimeout:
		return ErrTimeout
	case KindMemory:
		return ErrMemory
	}
	return ErrBadReturn
}

package config

import (
	"errors"
	"strconv"

	"github.com/hookjet/hookjet/signature"
)

// ErrInvalid is wrapped by every error that [Load], [Parse] and
// [Config.Validate] return, so that a caller can tell a configuration problem
// (exit code 2) from a runtime failure with errors.Is(err, config.ErrInvalid).
var ErrInvalid = errors.New("invalid configuration")

// ErrSecret is wrapped by every error from [DecodeSecret]: the value is not a
// "whsec_<base64>" webhook signing secret of 24 to 64 bytes. It is
// [signature.ErrSecret].
var ErrSecret = signature.ErrSecret

// FieldError is one problem with one configuration key. [Parse] and
// [Config.Validate] return an errors.Join of FieldErrors; use errors.As to
// inspect them one by one.
//
// A FieldError wraps both [ErrInvalid] and its reason. Its message never
// contains the value of a secret or of an endpoint header.
type FieldError struct {
	// Key names the offending setting as a path through the file, such as
	// "endpoints[1].url" or "defaults.retry.cap", or the environment variable
	// that carried the bad value, such as "HOOKJET_WORKER_CONCURRENCY".
	Key string
	// Line is the line of the key in the YAML file; 0 when unknown (the value
	// was inherited, came from the environment or from a program).
	Line int
	// Err is the reason.
	Err error
}

// Error returns "key: reason", followed by " (line N)" when the line is known.
func (e *FieldError) Error() string {
	msg := e.Key + ": " + e.Err.Error()
	if e.Line > 0 {
		msg += " (line " + strconv.Itoa(e.Line) + ")"
	}
	return msg
}

// Unwrap returns [ErrInvalid] and the reason.
func (e *FieldError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

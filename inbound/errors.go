package inbound

import "errors"

// Reasons a request is refused, returned by the schemes' verification and
// matched with [errors.Is].
var (
	// ErrMissingSignature means the request carries no signature header
	// (or, for scheme standard, no webhook-id or webhook-timestamp).
	ErrMissingSignature = errors.New("missing signature")
	// ErrInvalidSignature means no signature in the request matches any of
	// the source's secrets, or the header is malformed.
	ErrInvalidSignature = errors.New("invalid signature")
	// ErrOutsideWindow means the request is signed, but its signed
	// timestamp lies further from now than the source's tolerance: a replay
	// or a clock far off.
	ErrOutsideWindow = errors.New("timestamp outside the tolerance")
)

package dedupe

import "errors"

var (
	// ErrClosed is returned by FirstSeen, and passed to MarkDelivered's
	// callback, once Run has returned.
	ErrClosed = errors.New("dedupe ledger closed")

	// ErrInvalidID is returned (wrapped) for an empty endpoint or event id,
	// or one longer than MaxIDLen bytes.
	ErrInvalidID = errors.New("invalid id")

	// errMalformed describes a stored entry that cannot be decoded. Lookups
	// log it and treat the entry as absent, so that the next write repairs
	// it.
	errMalformed = errors.New("malformed ledger entry")
)

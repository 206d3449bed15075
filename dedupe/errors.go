package dedupe

import "errors"

var (
	// ErrClosed is returned by FirstSeen, and passed to MarkDelivered's
	// callback, once Run has returned.
	ErrClosed = errors.New("dedupe ledger closed")

	// ErrInvalidID is returned (wrapped) for an empty endpoint or event id,
	// or one longer than MaxIDLen bytes.
	ErrInvalidID = errors.New("invalid id")

	// ErrRecord is returned (wrapped) when a stored entry cannot be
	// decoded, for example one written by a newer hookjet.
	ErrRecord = errors.New("malformed ledger entry")
)

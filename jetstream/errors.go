package jetstream

import "errors"

var (
	// ErrUnknownEndpoint is returned for an endpoint id that is not configured.
	ErrUnknownEndpoint = errors.New("unknown endpoint")
	// ErrBadRequest wraps invalid input to an operator call (filters, ids).
	ErrBadRequest = errors.New("bad request")
)

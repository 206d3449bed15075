package api

import "errors"

// The error kinds of the admin API. Whoever answers a call wraps one of
// them (fmt.Errorf("%w: ...")); package admin maps them to HTTP statuses
// (404, 400, 409).

var (
	// ErrUnknownEndpoint is returned for an endpoint id that is not configured.
	ErrUnknownEndpoint = errors.New("unknown endpoint")
	// ErrBadRequest wraps invalid input to an operator call (filters, ids).
	ErrBadRequest = errors.New("bad request")
)

var (
	// ErrEndpointExists is returned when creating an endpoint whose id is
	// taken.
	ErrEndpointExists = errors.New("endpoint exists")
	// ErrConflict is returned when a change kept losing a race with other
	// writers.
	ErrConflict = errors.New("concurrent change")
)

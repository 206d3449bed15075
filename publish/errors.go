package publish

import "errors"

var (
	// ErrBusy is returned when the queue of events waiting to be stored is
	// full: the caller should retry later (HTTP 503).
	ErrBusy = errors.New("too many events waiting to be stored")
	// ErrClosed is returned once the committer stops taking events.
	ErrClosed = errors.New("hookjet is shutting down")
	// ErrUnavailable wraps the reason JetStream could not store a batch.
	ErrUnavailable = errors.New("JetStream cannot store the events")
)

package natsdest

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/destination"
)

// FullWait is how long a full stream (discard new) is left alone before
// the next attempt.
const FullWait = 30 * time.Second

// JetStream error codes classified here besides those nats.go names.
const (
	errCodeMaxMsgs     natsjs.ErrorCode = 10077 // maximum messages exceeded
	errCodeMaxBytes    natsjs.ErrorCode = 10078 // maximum bytes exceeded
	errCodeMaxMsgsSubj natsjs.ErrorCode = 10079 // maximum messages per subject exceeded
	errCodeStorage     natsjs.ErrorCode = 10047 // insufficient resources
)

// Classify says what a failed publish means (the table of docs/delivery.md,
// "NATS"), with the wait of a rate-limited one.
func Classify(err error) (destination.Class, time.Duration) {
	var apiErr *natsjs.APIError
	switch {
	case err == nil:
		return destination.Success, 0
	case errors.Is(err, destination.ErrRefused):
		return destination.Rejected, 0
	case errors.As(err, &apiErr):
		switch apiErr.ErrorCode {
		case errCodeMaxMsgs, errCodeMaxBytes, errCodeMaxMsgsSubj, errCodeStorage:
			return destination.RateLimited, FullWait
		case natsjs.JSErrCodeStreamMessageExceedsMaximum:
			return destination.Permanent, 0
		}
		if apiErr.Code >= 500 || apiErr.Code == 0 {
			return destination.Transient, 0 // no leader, JetStream unavailable for now
		}
		return destination.Permanent, 0 // another 4xx the stream answered
	case errors.Is(err, natsjs.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		// no stream takes the subject, after the client's retries
		return destination.Permanent, 0
	case errors.Is(err, nats.ErrMaxPayload), errors.Is(err, nats.ErrBadSubject),
		errors.Is(err, nats.ErrAuthorization), errors.Is(err, nats.ErrPermissionViolation),
		errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAuthRevoked),
		errors.Is(err, nats.ErrNkeysNotSupported):
		return destination.Permanent, 0
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoServers), errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrConnectionDraining),
		errors.Is(err, context.Canceled):
		return destination.Transient, 0
	}
	// a network error, or unknown: retrying is the safe side
	return destination.Transient, 0
}

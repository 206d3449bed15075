package rabbitmqdest

import (
	"errors"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hookjet/hookjet/destination"
)

// BlockedWait is how long a broker that blocks publishing (a resource
// alarm) is left alone.
const BlockedWait = 30 * time.Second

// Classify says what a failed publish means (the table of
// docs/delivery.md, "RabbitMQ"), with the wait of a rate-limited one.
func Classify(err error) (destination.Class, time.Duration) {
	var (
		ae  *amqp.Error
		ret *ReturnedError
		blk *BlockedError
	)
	switch {
	case err == nil:
		return destination.Success, 0
	case errors.Is(err, destination.ErrRefused):
		return destination.Rejected, 0
	case errors.As(err, &ret):
		return destination.Permanent, 0 // no queue bound: unroutable
	case errors.As(err, &blk):
		return destination.RateLimited, BlockedWait
	case errors.As(err, &ae):
		switch ae.Code {
		case amqp.NotFound, amqp.AccessRefused, amqp.PreconditionFailed,
			amqp.NotAllowed, amqp.NotImplemented, amqp.ContentTooLarge,
			amqp.SyntaxError, amqp.CommandInvalid:
			// an exchange that does not exist, a vhost or exchange the
			// user may not use, a refused login
			return destination.Permanent, 0
		case amqp.ResourceError:
			return destination.RateLimited, BlockedWait
		}
		// connection forced, internal error, channel error, and 501
		// FRAME_ERROR, which amqp091 reports for a connection lost
		return destination.Transient, 0
	}
	// a nack, a connection lost or refused, a timeout, or unknown: retry
	return destination.Transient, 0
}

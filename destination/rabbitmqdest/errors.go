package rabbitmqdest

import (
	"errors"
	"fmt"
)

// ErrNacked is a publish the broker refused to confirm (basic.nack: an
// internal error of the queue, e.g. a full quorum queue with reject-publish).
var ErrNacked = errors.New("the broker nacked the message")

// ReturnedError is a message the broker returned: no queue is bound to its
// routing key (312 NO_ROUTE).
type ReturnedError struct {
	Code     int
	Text     string
	Exchange string
	Key      string
}

func (e *ReturnedError) Error() string {
	return fmt.Sprintf("returned: %d %s (exchange %q, routing key %q)", e.Code, e.Text, e.Exchange, e.Key)
}

// BlockedError is an attempt that timed out while the broker blocked
// publishing on the connection (a memory or disk alarm).
type BlockedError struct {
	Reason string
}

func (e *BlockedError) Error() string {
	return "the broker blocks publishing: " + e.Reason
}

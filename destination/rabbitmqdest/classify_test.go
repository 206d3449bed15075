package rabbitmqdest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/destination/rabbitmqdest"
)

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want destination.Class
	}{
		{"guard", fmt.Errorf("dial: %w", destination.ErrRefused), destination.Rejected},
		{"no exchange", &amqp.Error{Code: amqp.NotFound, Reason: "NOT_FOUND - no exchange 'x' in vhost '/'"}, destination.Permanent},
		{"access refused", &amqp.Error{Code: amqp.AccessRefused, Reason: "ACCESS_REFUSED"}, destination.Permanent},
		{"wrong credentials", amqp.ErrCredentials, destination.Permanent},
		{"unroutable", &rabbitmqdest.ReturnedError{Code: 312, Text: "NO_ROUTE"}, destination.Permanent},
		{"resource alarm", &rabbitmqdest.BlockedError{Reason: "low on memory"}, destination.RateLimited},
		{"connection forced", &amqp.Error{Code: amqp.ConnectionForced, Reason: "CONNECTION_FORCED - broker forced connection closure"}, destination.Transient},
		{"connection lost", &amqp.Error{Code: amqp.FrameError, Reason: "read: connection reset by peer"}, destination.Transient},
		{"nack", rabbitmqdest.ErrNacked, destination.Transient},
		{"closed", amqp.ErrClosed, destination.Transient},
		{"timeout", context.DeadlineExceeded, destination.Transient},
		{"unknown", errors.New("x"), destination.Transient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := rabbitmqdest.Classify(tt.err)
			if got != tt.want || (got == destination.RateLimited) != (wait > 0) {
				t.Errorf("Classify = %v %v, want %v", got, wait, tt.want)
			}
		})
	}
}

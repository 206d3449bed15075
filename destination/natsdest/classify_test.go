package natsdest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/destination/natsdest"
)

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want destination.Class
	}{
		{"guard", fmt.Errorf("dial: %w", destination.ErrRefused), destination.Rejected},
		{"no stream takes the subject", natsjs.ErrNoStreamResponse, destination.Permanent},
		{"no responders", nats.ErrNoResponders, destination.Permanent},
		{"permissions", fmt.Errorf("%w: publish", nats.ErrPermissionViolation), destination.Permanent},
		{"authorization", nats.ErrAuthorization, destination.Permanent},
		{"payload too big", nats.ErrMaxPayload, destination.Permanent},
		{"stream full", &natsjs.APIError{Code: 503, ErrorCode: 10077, Description: "maximum messages exceeded"}, destination.RateLimited},
		{"message over the stream's max", &natsjs.APIError{Code: 400, ErrorCode: natsjs.JSErrCodeStreamMessageExceedsMaximum}, destination.Permanent},
		{"no leader", &natsjs.APIError{Code: 503, ErrorCode: 10008}, destination.Transient},
		{"another 4xx", &natsjs.APIError{Code: 400, ErrorCode: 10003}, destination.Permanent},
		{"timeout", context.DeadlineExceeded, destination.Transient},
		{"no servers", nats.ErrNoServers, destination.Transient},
		{"unknown", errors.New("something else"), destination.Transient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := natsdest.Classify(tt.err)
			if got != tt.want || (got == destination.RateLimited) != (wait > 0) {
				t.Errorf("Classify = %v %v, want %v", got, wait, tt.want)
			}
		})
	}
}

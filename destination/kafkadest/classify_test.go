package kafkadest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/destination/kafkadest"
)

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want destination.Class
	}{
		{"guard", fmt.Errorf("dial: %w", destination.ErrRefused), destination.Rejected},
		{"unknown topic after the client's retries", kerr.UnknownTopicOrPartition, destination.Permanent},
		{"topic not authorized", kerr.TopicAuthorizationFailed, destination.Permanent},
		{"SASL refused", kerr.SaslAuthenticationFailed, destination.Permanent},
		{"SASL, connection closed", fmt.Errorf("%w: %w", kafkadest.ErrSASL, io.EOF), destination.Permanent},
		{"record too large", kerr.MessageTooLarge, destination.Permanent},
		{"throttled", kerr.ThrottlingQuotaExceeded, destination.RateLimited},
		{"not enough replicas", kerr.NotEnoughReplicas, destination.Transient},
		{"leader moved", kerr.NotLeaderForPartition, destination.Transient},
		{"record timeout", kgo.ErrRecordTimeout, destination.Transient},
		{"attempt timeout", context.DeadlineExceeded, destination.Transient},
		{"connection lost", io.EOF, destination.Transient},
		{"unknown", errors.New("x"), destination.Transient},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, wait := kafkadest.Classify(tt.err)
			if got != tt.want || (got == destination.RateLimited) != (wait > 0) {
				t.Errorf("Classify = %v %v, want %v", got, wait, tt.want)
			}
		})
	}
}

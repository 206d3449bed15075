package kafkadest

import (
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/hookjet/hookjet/destination"
)

// QuotaWait is how long a cluster that throttles hookjet is left alone.
const QuotaWait = 30 * time.Second

// Classify says what a failed produce means (the table of
// docs/delivery.md, "Kafka"), with the wait of a rate-limited one.
func Classify(err error) (destination.Class, time.Duration) {
	if err == nil {
		return destination.Success, 0
	}
	if errors.Is(err, destination.ErrRefused) {
		return destination.Rejected, 0
	}
	if errors.Is(err, ErrSASL) {
		return destination.Permanent, 0
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		switch ke {
		case kerr.ThrottlingQuotaExceeded, kerr.PolicyViolation:
			if ke == kerr.ThrottlingQuotaExceeded {
				return destination.RateLimited, QuotaWait
			}
			return destination.Permanent, 0
		case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID, kerr.InvalidTopicException,
			kerr.TopicAuthorizationFailed, kerr.ClusterAuthorizationFailed,
			kerr.SaslAuthenticationFailed, kerr.UnsupportedSaslMechanism,
			kerr.MessageTooLarge, kerr.RecordListTooLarge, kerr.InvalidRecord,
			kerr.CorruptMessage, kerr.InvalidRequiredAcks:
			// an unknown topic is permanent once the client's retries
			// (4 metadata refreshes) found it nowhere
			return destination.Permanent, 0
		}
		if ke.Retriable {
			return destination.Transient, 0
		}
		return destination.Permanent, 0
	}
	// timeouts, a cluster down, a connection lost, or unknown: retry
	return destination.Transient, 0
}

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// Names of the streams, buckets and subjects hookjet owns.
const (
	EventsStream   = "HOOKJET_EVENTS"
	EventsPrefix   = "hookjet.events."
	ReplayStream   = "HOOKJET_REPLAY"
	ReplayPrefix   = "hookjet.replay."
	replayConsumer = "hookjet-replay"
	DLQStream      = "HOOKJET_DLQ"
	DLQPrefix      = "hookjet.dlq."
	OpsStream      = "HOOKJET_OPS"
	OpsPrefix      = "hookjet.ops."
	AdvisoryStream = "HOOKJET_ADVISORIES"
	// MaxDeliveriesSubject is where nats-server announces a message that hit
	// an endpoint consumer's MaxDeliver.
	MaxDeliveriesSubject = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + EventsStream + ".>"
	advisoryConsumer     = "hookjet-max-deliveries"
	AttemptsBucket       = "HOOKJET_ATTEMPTS"
	EndpointBucket       = "HOOKJET_ENDPOINTS"
	SeenBucket           = "HOOKJET_SEEN"
	consumerPrefix       = "ep-"
)

// Headers hookjet reads and writes on NATS messages.
const (
	HdrMsgID       = "Nats-Msg-Id"
	HdrContentType = "Content-Type"
	HdrEventID     = "Hookjet-Event-Id"
	HdrEventType   = "Hookjet-Event-Type"
	HdrEndpoint    = "Hookjet-Endpoint"
	HdrReason      = "Hookjet-Reason"
	HdrAttempts    = "Hookjet-Attempts"
	HdrLastStatus  = "Hookjet-Last-Status"
	HdrLastError   = "Hookjet-Last-Error"
	HdrFirstTry    = "Hookjet-First-Attempt"
	HdrLastTry     = "Hookjet-Last-Attempt"
	HdrReplayOf    = "Hookjet-Replay-Of"
)

// ConsumerName is the durable consumer of HOOKJET_EVENTS for one endpoint.
func ConsumerName(endpointID string) string { return consumerPrefix + endpointID }

// FilterSubjects are the subjects an endpoint's consumer reads: its event
// patterns under hookjet.events. (Replays have a stream of their own, so that
// an endpoint with one pattern has one filter subject: nats-server's fast
// path.)
func FilterSubjects(ep config.Endpoint) []string {
	out := make([]string, 0, len(ep.Events))
	for _, p := range ep.Events {
		out = append(out, EventsPrefix+p)
	}
	return out
}

// EnsureStreams creates or updates every stream and bucket hookjet needs. It
// is idempotent and safe to run from several processes at once.
func EnsureStreams(ctx context.Context, js natsjs.JetStream, cfg *config.Config) error {
	s := cfg.Streams
	streams := []natsjs.StreamConfig{{
		Name:        EventsStream,
		Description: "hookjet events awaiting delivery",
		Subjects:    []string{EventsPrefix + ">"},
		Retention:   natsjs.InterestPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  s.DuplicateWindow,
		MaxAge:      s.MaxAge,
		MaxBytes:    s.MaxBytes,
		MaxMsgSize:  int32(cfg.Security.MaxPayloadBytes) + 64<<10,
		Discard:     natsjs.DiscardNew,
	}, {
		Name:        DLQStream,
		Description: "hookjet dead letters: deliveries that gave up, with the reason in headers",
		Subjects:    []string{DLQPrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  10 * time.Minute,
		MaxAge:      s.DLQMaxAge,
		MaxBytes:    s.DLQMaxBytes,
		Discard:     natsjs.DiscardNew,
	}, {
		Name:        ReplayStream,
		Description: "hookjet dead letters sent back to their endpoint (hookjet.replay.<endpoint>)",
		Subjects:    []string{ReplayPrefix + ">"},
		Retention:   natsjs.WorkQueuePolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  10 * time.Minute,
		MaxAge:      s.DLQMaxAge,
		MaxBytes:    s.DLQMaxBytes,
		Discard:     natsjs.DiscardNew,
	}, {
		// The safety net: MAX_DELIVERIES advisories are published only to
		// whoever listens at that moment, so a stream keeps them until
		// hookjet has moved the message they name to the DLQ.
		Name:        AdvisoryStream,
		Description: "hookjet: JetStream MaxDeliver advisories for endpoint consumers",
		Subjects:    []string{MaxDeliveriesSubject},
		Retention:   natsjs.WorkQueuePolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		MaxAge:      s.MaxAge,
		MaxBytes:    64 << 20,
		Discard:     natsjs.DiscardOld,
	}, {
		Name:        OpsStream,
		Description: "hookjet operational events",
		Subjects:    []string{OpsPrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		MaxAge:      7 * 24 * time.Hour,
		MaxBytes:    64 << 20,
		Discard:     natsjs.DiscardOld,
	}}
	for _, sc := range streams {
		if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
			return fmt.Errorf("stream %s: %w", sc.Name, err)
		}
	}
	kvs := []natsjs.KeyValueConfig{{
		Bucket:      AttemptsBucket,
		Description: "hookjet attempt state per endpoint and message",
		TTL:         s.MaxAge,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		MaxBytes:    1 << 30,
	}, {
		Bucket:      SeenBucket,
		Description: "hookjet event ids already accepted, shared by all processes (dedupe past the duplicate window)",
		TTL:         cfg.Dedupe.TTL,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		MaxBytes:    1 << 30,
	}, {
		Bucket:      EndpointBucket,
		Description: "hookjet endpoints disabled by a 410 or an operator",
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		MaxBytes:    16 << 20,
	}}
	for _, kc := range kvs {
		if _, err := js.CreateOrUpdateKeyValue(ctx, kc); err != nil {
			return fmt.Errorf("bucket %s: %w", kc.Bucket, err)
		}
	}
	return nil
}

// maxDeliver is JetStream's safety net above hookjet's own attempt limit:
// deferrals (breaker, rate limit, shutdown) also count as deliveries.
func maxDeliver(maxAttempts int) int { return max(100, 5*maxAttempts) }

// ackWait covers the HTTP timeout plus time spent in the client buffer.
func ackWait(ep config.Endpoint) time.Duration {
	return max(30*time.Second, 2*ep.Timeout+15*time.Second)
}

// EnsureConsumer creates or updates the durable consumer of one endpoint.
func EnsureConsumer(ctx context.Context, js natsjs.JetStream, ep config.Endpoint) (natsjs.Consumer, error) {
	cc := natsjs.ConsumerConfig{
		Durable:        ConsumerName(ep.ID),
		Description:    "hookjet deliveries to endpoint " + ep.ID,
		DeliverPolicy:  natsjs.DeliverNewPolicy,
		AckPolicy:      natsjs.AckExplicitPolicy,
		AckWait:        ackWait(ep),
		MaxDeliver:     maxDeliver(ep.Retry.MaxAttempts),
		FilterSubjects: FilterSubjects(ep),
		MaxAckPending:  20000,
		MaxWaiting:     512,
	}
	c, err := js.CreateOrUpdateConsumer(ctx, EventsStream, cc)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cc.Durable, err)
	}
	return c, nil
}

// EnsureReplayConsumer creates or updates the one consumer of HOOKJET_REPLAY
// that every hookjet process shares. Replays are operator actions, rare and
// bounded: they go through the endpoint's in-flight cap, rate limit and
// breaker like any delivery, and are put back when the endpoint cannot take
// them now.
func EnsureReplayConsumer(ctx context.Context, js natsjs.JetStream, cfg *config.Config) (natsjs.Consumer, error) {
	wait := 2 * time.Minute
	for _, ep := range cfg.Endpoints {
		wait = max(wait, ackWait(ep))
	}
	c, err := js.CreateOrUpdateConsumer(ctx, ReplayStream, natsjs.ConsumerConfig{
		Durable:       replayConsumer,
		Description:   "hookjet replays of dead letters",
		AckPolicy:     natsjs.AckExplicitPolicy,
		AckWait:       wait,
		MaxAckPending: 20000,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", replayConsumer, err)
	}
	return c, nil
}

// RemoveStaleConsumers deletes endpoint consumers whose endpoint is no longer
// configured, so their messages stop being retained.
func RemoveStaleConsumers(ctx context.Context, js natsjs.JetStream, keep map[string]bool) ([]string, error) {
	st, err := js.Stream(ctx, EventsStream)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", EventsStream, err)
	}
	var removed []string
	names := st.ConsumerNames(ctx)
	for name := range names.Name() {
		if len(name) <= len(consumerPrefix) || name[:len(consumerPrefix)] != consumerPrefix {
			continue
		}
		if keep[name[len(consumerPrefix):]] {
			continue
		}
		if err := st.DeleteConsumer(ctx, name); err != nil && !errors.Is(err, natsjs.ErrConsumerNotFound) {
			return removed, fmt.Errorf("delete consumer %s: %w", name, err)
		}
		removed = append(removed, name)
	}
	if err := names.Err(); err != nil {
		return removed, fmt.Errorf("list consumers: %w", err)
	}
	return removed, nil
}

package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/publish"
)

// Names of the streams, buckets, consumers and subjects hookjet owns.
const (
	EventsStream   = "HOOKJET_EVENTS"
	EventsPrefix   = "hookjet.events."
	TasksStream    = "HOOKJET_TASKS"
	TasksPrefix    = "hookjet.tasks."
	SchedPrefix    = "hookjet.sched."
	DLQStream      = "HOOKJET_DLQ"
	DLQPrefix      = "hookjet.dlq."
	OpsStream      = "HOOKJET_OPS"
	OpsPrefix      = "hookjet.ops."
	AdvisoryStream = "HOOKJET_ADVISORIES"
	// MaxDeliveriesPrefix is where nats-server announces a message that hit
	// a consumer's MaxDeliver.
	MaxDeliveriesPrefix = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES."
	AdvisoryConsumer    = "hookjet-max-deliveries"
	FanoutConsumer      = "hookjet-fanout"
	DrainPrefix         = "drain-"
	StateBucket         = "HOOKJET_ENDPOINT_STATE"
	// EndpointBucket holds the endpoints created through the admin API.
	EndpointBucket = "HOOKJET_ENDPOINTS"
	// ConfigEndpointBucket holds the definitions of every process's
	// config-file endpoints (see the dispatch package).
	ConfigEndpointBucket = "HOOKJET_CONFIG_ENDPOINTS"
	// EventTypeBucket holds the event-type catalogue: the types created
	// through the admin API and those of every process's config file.
	EventTypeBucket = "HOOKJET_EVENT_TYPES"
	// Legacy names of the first design, read only to upgrade from it.
	LegacyConsumerPrefix = "ep-"
	LegacyReplayStream   = "HOOKJET_REPLAY"
	LegacyAttempts       = "HOOKJET_ATTEMPTS"
)

// Consumers' delivery limits: JetStream's safety nets above hookjet's own
// attempt counting (deferrals and crashes count as deliveries too).
const (
	EventsMaxDeliver = 100
	TasksMaxDeliver  = 100
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
	// HdrTenant names an event's tenant (config.CheckTenant): it reaches
	// that tenant's endpoints and those without a tenant. Tasks and dead
	// letters carry it on.
	HdrTenant = "Hookjet-Tenant"
	// HdrOrderingKey is an event's ordering key (publish.HeaderKey, read
	// with OrderingKey): tasks and dead letters carry it on, and the POST
	// to an endpoint sends it.
	HdrOrderingKey = publish.HeaderKey
	// HdrIncarnation is the created_at (Unix nanoseconds) of the API
	// endpoint a task or dead letter was stored for; absent for config-file
	// endpoints. An endpoint deleted and created again with the same id is
	// another incarnation: it never sees the earlier one's tasks or dead
	// letters.
	HdrIncarnation = "Hookjet-Endpoint-Created"
	// HdrPublished, HdrEventKey and HdrEventSeq on a task or an ordered
	// entry are its event's publish time (RFC 3339), its key (endpoint and
	// event: the Nats-Msg-Id's part) and its HOOKJET_EVENTS sequence.
	HdrPublished = "Hookjet-Published"
	HdrEventKey  = "Hookjet-Event-Key"
	HdrEventSeq  = "Hookjet-Event-Seq"
)

// DrainConsumerName is the short-lived consumer of one endpoint's tasks.
func DrainConsumerName(endpointID string) string { return DrainPrefix + endpointID }

// EnsureStreams creates or updates every stream and bucket hookjet needs. It
// is idempotent and safe to run from several processes at once; a stream
// whose configuration is unchanged is not updated. Each call is retried with
// a short timeout and backoff until ctx ends, so a cluster that is still
// electing leaders delays start-up instead of failing it.
func EnsureStreams(ctx context.Context, js natsjs.JetStream, cfg *config.Config, log *slog.Logger) error {
	// A change NATS cannot make is refused before any stream changes.
	if cfg.Streams.Replicas > 1 && js.Conn().ConnectedClusterName() == "" {
		return &RefusedError{notClustered(&natsjs.APIError{ErrorCode: jsErrReplicasNotSupported, Description: "replicas > 1 not supported in non-clustered mode"}, cfg.Streams.Replicas)}
	}
	if err := retry(ctx, log, "stream "+LogStream, func(ctx context.Context) error { return checkLogReplicas(ctx, js, cfg) }); err != nil {
		return err
	}
	for _, sc := range streamConfigs(cfg) {
		if err := retry(ctx, log, "stream "+sc.Name, func(ctx context.Context) error { return noRoom(cfg, ensureStream(ctx, js, sc)) }); err != nil {
			return err
		}
	}
	for _, kc := range bucketConfigs(cfg) {
		if err := retry(ctx, log, "bucket "+kc.Bucket, func(ctx context.Context) error {
			if st, err := js.Stream(ctx, "KV_"+kc.Bucket); err == nil && st.CachedInfo().Config.Replicas == kc.Replicas {
				return nil // as it is: a start never resets a bucket's other limits
			}
			_, err := js.CreateOrUpdateKeyValue(ctx, kc)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

// streamConfigs are the streams hookjet owns.
func streamConfigs(cfg *config.Config) []natsjs.StreamConfig {
	s := cfg.Streams
	return []natsjs.StreamConfig{{
		Name:        EventsStream,
		Description: "hookjet event log: every event, kept for streams.max_age (redelivery reads it)",
		Subjects:    []string{EventsPrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  s.DuplicateWindow,
		MaxAge:      s.MaxAge,
		MaxBytes:    s.MaxBytes,
		MaxMsgSize:  MaxMsgSize(cfg),
		Discard:     natsjs.DiscardNew,
		// Atomic batches are fsynced once per batch (the outbox relay's).
		AllowAtomicPublish: true,
	}, {
		// Deliveries that could not be settled at once, per endpoint
		// (hookjet.tasks.<endpoint>), and retries waiting for their time as
		// message schedules (hookjet.sched.<endpoint>.<event>). Schedules
		// need Discard: Old. MaxAge is only the backstop for tasks no
		// endpoint claims: hookjet expires every other task itself, so the
		// server must never age one out first (see TasksMaxAge).
		Name:              TasksStream,
		Description:       "hookjet deliveries waiting for their endpoint: parked tasks and scheduled retries",
		Subjects:          []string{TasksPrefix + ">", SchedPrefix + ">"},
		Retention:         natsjs.WorkQueuePolicy,
		Storage:           natsjs.FileStorage,
		Replicas:          s.Replicas,
		Duplicates:        s.DuplicateWindow,
		MaxAge:            TasksMaxAge(cfg),
		MaxBytes:          TasksStreamBytes(s.TasksMaxBytes),
		MaxMsgSize:        MaxMsgSize(cfg),
		Discard:           natsjs.DiscardOld,
		AllowMsgSchedules: true,
		AllowRollup:       true,
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
		MaxMsgSize:  MaxMsgSize(cfg),
		Discard:     natsjs.DiscardNew,
	}, {
		// The safety net: MAX_DELIVERIES advisories are published only to
		// whoever listens at that moment, so a stream keeps them until
		// hookjet has moved the message they name to the DLQ.
		Name:        AdvisoryStream,
		Description: "hookjet: JetStream MaxDeliver advisories for the fan-out and drain consumers",
		Subjects:    []string{MaxDeliveriesPrefix + EventsStream + ".>", MaxDeliveriesPrefix + TasksStream + ".>"},
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
	}, seenStreamConfig(cfg), laneStreamConfig(cfg)}
}

// TasksMaxAge is HOOKJET_TASKS' MaxAge for cfg: at least streams.max_age,
// and longer than any delivery of cfg's endpoints can wait before hookjet
// dead-letters it as expired (see TaskAge). The events' MaxAge alone would
// let the server drop a task silently whenever retry.max_age is longer.
func TasksMaxAge(cfg *config.Config) time.Duration {
	age := max(cfg.Streams.MaxAge, TaskAge(cfg.Defaults))
	for _, ep := range cfg.Endpoints {
		age = max(age, TaskAge(ep.Settings))
	}
	return age
}

// TaskAge is how long HOOKJET_TASKS must keep a task of an endpoint with
// settings s: its retry.max_age, plus the longest it may then wait before
// hookjet looks at it and dead-letters it (an open breaker's
// breaker.max_cooldown, a Retry-After hold or backoff of retry.cap), plus
// ten minutes.
func TaskAge(s config.Settings) time.Duration {
	return s.Retry.MaxAge + max(s.Retry.Cap, s.Breaker.MaxCooldown) + 10*time.Minute
}

// RaiseTasksMaxAge makes HOOKJET_TASKS keep tasks for at least age (an
// endpoint created through the admin API with a longer retry.max_age than
// the config file's) and returns the MaxAge now in force (0: unlimited)
// and whether it raised it. It never lowers it.
func RaiseTasksMaxAge(ctx context.Context, js natsjs.JetStream, age time.Duration) (time.Duration, bool, error) {
	st, err := js.Stream(ctx, TasksStream)
	if err != nil {
		return 0, false, fmt.Errorf("stream %s: %w", TasksStream, err)
	}
	sc := st.CachedInfo().Config
	if sc.MaxAge == 0 || sc.MaxAge >= age {
		return sc.MaxAge, false, nil
	}
	sc.MaxAge = age
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		return 0, false, fmt.Errorf("stream %s: raise max age to %s: %w", TasksStream, age, err)
	}
	return age, true, nil
}

// TasksStreamBytes is HOOKJET_TASKS' own MaxBytes: a quarter (at least
// 64 MiB) above streams.tasks_max_bytes, the bound hookjet enforces by
// dead-lettering (reason overflow), so that the server, which drops the
// oldest messages of a stream that allows schedules, never drops a task.
func TasksStreamBytes(tasksMax int64) int64 {
	return tasksMax + max(tasksMax/4, 64<<20)
}

// bucketConfigs are the KV buckets hookjet creates at start (the endpoint
// stores create their own).
func bucketConfigs(cfg *config.Config) []natsjs.KeyValueConfig {
	s := cfg.Streams
	return []natsjs.KeyValueConfig{{
		Bucket:      StateBucket,
		Description: "hookjet endpoints disabled (410, operator) or held (Retry-After)",
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		MaxBytes:    64 << 20,
	}, laneBucketConfig(cfg)}
}

// ensureStream creates sc, or updates it when its configuration differs
// from what is stored.
func ensureStream(ctx context.Context, js natsjs.JetStream, sc natsjs.StreamConfig) error {
	st, err := js.Stream(ctx, sc.Name)
	if errors.Is(err, natsjs.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, sc)
		return notClustered(err, sc.Replicas)
	}
	if err != nil {
		return err
	}
	cur := st.CachedInfo().Config
	if sc.Name == TasksStream && (cur.MaxAge == 0 || cur.MaxAge > sc.MaxAge) {
		// Only ever raised: another process, or an API endpoint, may need
		// the longer age (RaiseTasksMaxAge).
		sc.MaxAge = cur.MaxAge
	}
	if streamUpToDate(cur, sc) {
		return nil
	}
	if sc.Metadata == nil {
		sc.Metadata = cur.Metadata // keeps hookjet.sync (durability.go) and the operator's keys
	}
	_, err = js.UpdateStream(ctx, sc)
	if err != nil && cur.Replicas != sc.Replicas {
		return notClustered(fmt.Errorf("streams.replicas %d (the stream has %d): %w", sc.Replicas, cur.Replicas, err), sc.Replicas)
	}
	return err
}

// notClustered explains err when it says the server is not clustered.
func notClustered(err error, replicas int) error {
	var apiErr *natsjs.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrReplicasNotSupported {
		return fmt.Errorf("streams.replicas %d needs a JetStream cluster of at least %d servers, and this NATS server is not clustered (the embedded server never is): set streams.replicas: 1, or nats.url to a cluster: %w", replicas, replicas, err)
	}
	return err
}

// RefusedError is a change of hookjet's streams that NATS will never
// accept as asked: start-up stops at once with it instead of retrying.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// refused reports whether err is a refusal that retrying cannot change: a
// RefusedError, replicas on a server that is not clustered, a stream
// configuration NATS calls invalid, a stream larger than the storage left.
func refused(err error) bool {
	var re *RefusedError
	if errors.As(err, &re) {
		return true
	}
	var apiErr *natsjs.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jsErrReplicasNotSupported, jsErrStreamInvalidConfig, jsErrStorageExceeded:
			return true
		}
	}
	return false
}

// nats-server error codes hookjet acts on (server/errors.json).
const (
	jsErrReplicasNotSupported natsjs.ErrorCode = 10074 // replicas > 1 not supported in non-clustered mode
	jsErrStreamInvalidConfig  natsjs.ErrorCode = 10052
	jsErrStorageExceeded      natsjs.ErrorCode = 10047 // insufficient storage resources available
)

// noRoom explains err when NATS refuses a stream because it cannot reserve
// the stream's max_bytes. Each stream reserves its whole limit when it is
// created, and a server lets JetStream use a bounded share of its disk (the
// embedded server: 75% of what is free under data_dir when it starts), so
// a small disk refuses the default limits. Waiting does not free disk:
// start-up stops at once, naming the keys that size the reservation.
func noRoom(cfg *config.Config, err error) error {
	var apiErr *natsjs.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != jsErrStorageExceeded {
		return err
	}
	s := cfg.Streams
	var total int64
	for _, sc := range streamConfigs(cfg) {
		total += sc.MaxBytes
	}
	for _, kc := range bucketConfigs(cfg) {
		total += kc.MaxBytes
	}
	total += endpointBucketConfig(s.Replicas).MaxBytes
	logPart := ""
	if cfg.Log.Enabled {
		total += cfg.Log.MaxBytes
		logPart = ", log.max_bytes " + sizeOf(cfg.Log.MaxBytes)
	}
	return &RefusedError{fmt.Errorf("NATS has too little storage for hookjet's streams, which reserve %s in all "+
		"(the largest: streams.max_bytes %s, streams.tasks_max_bytes %s, streams.dlq_max_bytes %s%s, "+
		"dedupe.ttl's %s of ids): lower those keys or give the NATS server more disk "+
		"(the embedded server may use 75%% of the disk free under data_dir): %w",
		sizeOf(total), sizeOf(s.MaxBytes), sizeOf(s.TasksMaxBytes), sizeOf(s.DLQMaxBytes), logPart,
		sizeOf(SeenBytes(cfg.Dedupe.TTL)), err)}
}

// sizeOf writes n bytes in the largest binary unit that keeps one decimal.
func sizeOf(n int64) string {
	switch {
	case n >= 1<<30:
		return strconv.FormatFloat(float64(n)/(1<<30), 'f', 1, 64) + " GiB"
	case n >= 1<<20:
		return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

func streamUpToDate(cur, want natsjs.StreamConfig) bool {
	return cur.Description == want.Description && slices.Equal(cur.Subjects, want.Subjects) &&
		cur.Retention == want.Retention && cur.Replicas == want.Replicas && cur.Duplicates == want.Duplicates &&
		cur.MaxAge == want.MaxAge && cur.MaxBytes == want.MaxBytes && cur.MaxMsgSize == want.MaxMsgSize &&
		cur.Discard == want.Discard && cur.AllowMsgSchedules == want.AllowMsgSchedules &&
		cur.AllowAtomicPublish == want.AllowAtomicPublish
}

// retry runs fn with a short timeout until it succeeds or ctx ends, backing
// off between tries and logging why it waits.
func retry(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) error {
	backoff := 250 * time.Millisecond
	for try := 1; ; try++ {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := fn(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if refused(err) {
			return fmt.Errorf("%s: %w", what, err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: %w (last error: %w)", what, ctx.Err(), err)
		}
		if log != nil {
			log.Warn("NATS not ready; retrying", "what", what, "try", try, "err", err)
		}
		t := time.NewTimer(backoff + rand.N(backoff))
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		backoff = min(2*backoff, 5*time.Second)
	}
}

// EnsureFanoutConsumer returns the shared consumer of HOOKJET_EVENTS,
// creating it when missing (starting with the first stored event), with an
// AckWait of at least wait.
func EnsureFanoutConsumer(ctx context.Context, js natsjs.JetStream, wait time.Duration) (natsjs.Consumer, error) {
	return EnsureFanoutConsumerFrom(ctx, js, wait, 0)
}

// EnsureFanoutConsumerFrom is EnsureFanoutConsumer for an upgrade that has
// already turned the events before startSeq into tasks: a new consumer
// starts there.
func EnsureFanoutConsumerFrom(ctx context.Context, js natsjs.JetStream, wait time.Duration, startSeq uint64) (natsjs.Consumer, error) {
	if c, err := js.Consumer(ctx, EventsStream, FanoutConsumer); err == nil {
		cc := c.CachedInfo().Config
		if cc.AckWait >= wait {
			return c, nil
		}
		cc.AckWait = wait // a process with longer timeouts raises it
		if c, err = js.UpdateConsumer(ctx, EventsStream, cc); err != nil {
			return nil, fmt.Errorf("consumer %s: %w", FanoutConsumer, err)
		}
		return c, nil
	}
	cc := natsjs.ConsumerConfig{
		Durable:       FanoutConsumer,
		Description:   "hookjet fan-out: every event to every matching endpoint, shared by all hookjet processes",
		DeliverPolicy: natsjs.DeliverAllPolicy,
		AckPolicy:     natsjs.AckExplicitPolicy,
		AckWait:       wait,
		MaxDeliver:    EventsMaxDeliver,
		FilterSubject: EventsPrefix + ">",
		MaxAckPending: 20000,
		MaxWaiting:    512,
	}
	if startSeq > 0 {
		cc.DeliverPolicy, cc.OptStartSeq = natsjs.DeliverByStartSequencePolicy, startSeq
	}
	c, err := js.CreateOrUpdateConsumer(ctx, EventsStream, cc)
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", FanoutConsumer, err)
	}
	return c, nil
}

// DrainAckWait is the drain consumers' AckWait: short, so the tasks a
// process had taken when it died come back within seconds, not after an
// HTTP timeout. A process keeps each task it works on alive with
// InProgress every DrainHeartbeat, however long its request takes.
const (
	DrainAckWait   = 4 * time.Second
	DrainHeartbeat = time.Second
)

// EnsureDrainConsumer creates or updates the drain consumer of one
// endpoint's tasks. The server removes it after a minute without pulls.
//
// Its state is kept in memory (MemoryStorage), on as many servers as the
// tasks: HOOKJET_TASKS is a work queue, so a task is gone once
// acknowledged, and a drain consumer lost with its servers (an embedded
// server's restart, a whole cluster's) is made again and hands out exactly
// the tasks still waiting, at once. Kept on disk, every ack rewrote its
// state file (a temporary file, a write, a rename) on every replica: in a
// CPU profile of the three nodes during the bench's cluster3, those writes
// were 20% of the nodes' time. (One replica, Replicas 1, would also save
// the raft group each drain consumer is on a cluster; measured, drains
// then stalled with tasks left waiting, so it is not done.)
func EnsureDrainConsumer(ctx context.Context, js natsjs.JetStream, ep config.Endpoint) (natsjs.Consumer, error) {
	cc := natsjs.ConsumerConfig{
		Durable:           DrainConsumerName(ep.ID),
		Description:       "hookjet drain of endpoint " + ep.ID,
		AckPolicy:         natsjs.AckExplicitPolicy,
		AckWait:           DrainAckWait,
		MaxDeliver:        TasksMaxDeliver,
		FilterSubject:     TasksPrefix + ep.ID,
		MaxAckPending:     max(64, 2*ep.MaxInFlight),
		InactiveThreshold: DrainInactiveThreshold,
		MemoryStorage:     true,
	}
	c, err := js.CreateOrUpdateConsumer(ctx, TasksStream, cc)
	if err != nil && strings.Contains(err.Error(), "storage type can not be updated") {
		// A drain consumer of an earlier version, kept on disk: its
		// unacknowledged tasks stay in the work queue for the new one.
		if derr := js.DeleteConsumer(ctx, TasksStream, cc.Durable); derr == nil || errors.Is(derr, natsjs.ErrConsumerNotFound) {
			c, err = js.CreateOrUpdateConsumer(ctx, TasksStream, cc)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", cc.Durable, err)
	}
	return c, nil
}

// DrainInactiveThreshold is how long the server keeps a drain consumer no
// process pulls from.
const DrainInactiveThreshold = time.Minute

// ReadInactive is how long the server keeps an ordered consumer that reads
// a stream (a DLQ listing, a redelivery) after its last pull, instead of
// nats.go's five minutes: polling the admin API piles none up.
const ReadInactive = 5 * time.Second

// MaxMsgSize is the largest message hookjet's streams take: an event of
// security.max_payload_bytes with 64 KiB for its headers.
func MaxMsgSize(cfg *config.Config) int32 {
	return int32(cfg.Security.MaxPayloadBytes) + 64<<10
}

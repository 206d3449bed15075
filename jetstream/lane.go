package jetstream

import (
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// The ordered lane: keyed deliveries to endpoints with ordering: key wait
// their turn in HOOKJET_ORDERED, on one subject per endpoint
// (hookjet.ordered.<endpoint>), each a task-shaped message that carries
// its own payload and attempt state. One process at a time (the owner of
// the "owner" key of HOOKJET_ORDERING) reads the stream and attempts each
// key's deliveries one at a time (see package dispatch, lane.go).
const (
	LaneStream = "HOOKJET_ORDERED"
	LanePrefix = "hookjet.ordered."
	// LaneBucket holds the lane's owner: a process id renewed every
	// second, taken over by another process once it stops changing.
	LaneBucket = "HOOKJET_ORDERING"
)

// laneStreamConfig is HOOKJET_ORDERED's configuration. Hookjet deletes each
// entry once its delivery is settled and expires entries itself
// (retry.max_age), so the stream has no MaxAge; it is bounded like
// HOOKJET_TASKS by streams.tasks_max_bytes, refusing (Discard: New) rather
// than dropping: an entry the stream refuses leaves its event unsettled, to
// come back.
func laneStreamConfig(cfg *config.Config) natsjs.StreamConfig {
	s := cfg.Streams
	return natsjs.StreamConfig{
		Name:        LaneStream,
		Description: "hookjet ordered deliveries: keyed events waiting their turn at endpoints with ordering: key",
		Subjects:    []string{LanePrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  s.DuplicateWindow,
		MaxBytes:    TasksStreamBytes(s.TasksMaxBytes),
		MaxMsgSize:  MaxMsgSize(cfg),
		Discard:     natsjs.DiscardNew,
	}
}

// laneBucketConfig is HOOKJET_ORDERING's configuration: one key.
func laneBucketConfig(cfg *config.Config) natsjs.KeyValueConfig {
	return natsjs.KeyValueConfig{
		Bucket:      LaneBucket,
		Description: "hookjet: the process that delivers the ordered lane (HOOKJET_ORDERED)",
		Storage:     natsjs.FileStorage,
		Replicas:    cfg.Streams.Replicas,
		MaxBytes:    1 << 20,
	}
}

package jetstream

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// The ordered lane: keyed deliveries to endpoints with ordering: key wait
// their turn in HOOKJET_ORDERED, on one subject per endpoint
// (hookjet.ordered.<endpoint>), each a task-shaped message that carries
// its own payload and attempt state. One process at a time (the owner of
// the "owner" key of HOOKJET_ORDERING) reads the stream and attempts each
// key's deliveries one at a time (see package dispatch/lane).
const (
	LaneStream = "HOOKJET_ORDERED"
	LanePrefix = "hookjet.ordered."
	// LaneBucket holds the lane's owner: a process id renewed every
	// second, taken over by another process once it stops changing.
	LaneBucket = "HOOKJET_ORDERING"
)

// LaneBytes is HOOKJET_ORDERED's MaxBytes: an eighth of
// streams.tasks_max_bytes, at least 64 MiB (1 GiB by default: about a
// million waiting ordered deliveries of 1 KB). JetStream reserves every
// stream's MaxBytes against the disk, so the lane takes a share of the
// tasks' budget rather than a budget of its own.
func LaneBytes(tasksMax int64) int64 { return max(tasksMax/8, 64<<20) }

// laneStreamConfig is HOOKJET_ORDERED's configuration. Hookjet deletes each
// entry once its delivery is settled and expires entries itself
// (retry.max_age), so the stream has no MaxAge; it refuses (Discard: New)
// rather than drops: a delivery the full lane refuses is dead-lettered as
// overflow.
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
		MaxBytes:    LaneBytes(s.TasksMaxBytes),
		MaxMsgSize:  MaxMsgSize(cfg),
		Discard:     natsjs.DiscardNew,
		// The owner stores a waiting key's entries again in one atomic
		// batch: one synced write for all of them.
		AllowAtomicPublish: true,
	}
}

// PublishLaneBatch stores msgs, entries of HOOKJET_ORDERED, as one atomic
// batch (one synced write for all with nats.sync: always) and returns the
// sequence of the first: they are stored one after the other, in order.
// An error means none is stored, but for a timeout, after which all may be.
func PublishLaneBatch(ctx context.Context, nc *nats.Conn, msgs []*nats.Msg) (uint64, error) {
	ack, err := sendAtomic(ctx, nc, msgs, 5*time.Second)
	if err != nil {
		return 0, err
	}
	if ack.Stream != LaneStream || ack.Seq < uint64(len(msgs)) {
		return 0, fmt.Errorf("atomic batch for %s stored in %q at %d", LaneStream, ack.Stream, ack.Seq)
	}
	return ack.Seq - uint64(len(msgs)) + 1, nil
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

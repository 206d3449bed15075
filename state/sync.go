package state

import (
	"context"
	"log/slog"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SyncEvery is hookjet's durability policy for the state file with a lazy
// nats.sync (with nats.sync: always bbolt fsyncs every commit instead):
// commits go to the page cache (db.NoSync), so a process crash loses none
// of them and a commit per delivery batch costs microseconds, not an fsync;
// an fdatasync every interval bounds what a power loss can take (JetStream's
// own store syncs every two minutes by default). The caller sets db.NoSync before
// any transaction runs concurrently with this; SyncEvery syncs until ctx is
// done, and once more before it returns.
func SyncEvery(ctx context.Context, db *bolt.DB, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := db.Sync(); err != nil {
				log.Warn("sync state file", "err", err)
			}
			return
		case <-t.C:
			if err := db.Sync(); err != nil {
				log.Warn("sync state file", "err", err)
			}
		}
	}
}

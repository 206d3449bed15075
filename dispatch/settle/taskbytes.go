package settle

import (
	"context"
	"sync"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// TaskBytes is this process's count of HOOKJET_TASKS' bytes, which
// streams.tasks_max_bytes holds against: the server's figure as last read,
// plus what this process stored since that read began, plus what it
// reserved and has not stored yet. A read never wipes out a reservation
// whose task is still on its way (the server's figure cannot hold it yet),
// and a task stored while a read was under way is counted twice until the
// next read: the count errs high, never low, so streams.tasks_max_bytes
// holds with many parks in flight. The zero value is ready to use.
type TaskBytes struct {
	mu      sync.Mutex
	read    int64 // the server's figure at the last read
	mark    int64 // storedN when that read began
	storedN int64 // bytes stored by this process, ever
	pending int64 // reserved, not stored yet
}

// Reserve takes size bytes if the count stays within max.
func (t *TaskBytes) Reserve(size, max int64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.read+t.storedN-t.mark+t.pending+size > max {
		return false
	}
	t.pending += size
	return true
}

// Release gives back a reservation whose task was not stored.
func (t *TaskBytes) Release(size int64) {
	t.mu.Lock()
	t.pending -= size
	t.mu.Unlock()
}

// Stored turns a reservation of size bytes into a stored task.
func (t *TaskBytes) Stored(size int64) {
	t.mu.Lock()
	t.pending -= size
	t.storedN += size
	t.mu.Unlock()
}

// Read takes the server's figure of HOOKJET_TASKS' bytes, read through js.
func (t *TaskBytes) Read(ctx context.Context, js natsjs.JetStream) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	mark := t.beginRead()
	st, err := js.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		return err
	}
	t.setRead(int64(st.CachedInfo().State.Bytes), mark)
	return nil
}

// beginRead notes what was stored before a read of the server's figure.
func (t *TaskBytes) beginRead() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.storedN
}

// setRead takes the server's figure, read after beginRead returned mark.
func (t *TaskBytes) setRead(bytes, mark int64) {
	t.mu.Lock()
	t.read, t.mark = bytes, mark
	t.mu.Unlock()
}

// Used is the count.
func (t *TaskBytes) Used() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.read + t.storedN - t.mark + t.pending
}

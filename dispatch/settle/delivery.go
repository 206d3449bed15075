package settle

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
)

// Endpoint is what settlement keeps of one endpoint across its deliveries:
// its id, whether it is gone, and the counts of its waiting deliveries
// (bounds.go). The engine's runtime of an endpoint embeds it.
type Endpoint struct {
	ID string
	// Removed: no longer in force in this process; late results bring
	// none of its series back.
	Removed atomic.Bool
	// Deleted: removed through the admin API, for every process; its
	// deliveries still in flight store no retry or task (no one would
	// take them, and an id created again would).
	Deleted atomic.Bool
	// Backlog counts the tasks this process stored for the endpoint and
	// not yet consumed: max_backlog applies to it.
	Backlog atomic.Int64
	// BacklogBytes is their size in HOOKJET_TASKS.
	BacklogBytes atomic.Int64
	// Busy counts the busy tasks (see BusyCause) it stored and not yet
	// consumed: none counts toward max_backlog.
	Busy atomic.Int64
	// Waiting is the set the endpoint joins when its Backlog rises above
	// zero; nil: none.
	Waiting *Backlogged
}

// Delivery is one event on its way to one endpoint, as settlement sees it.
// The engine's delivery embeds it.
type Delivery struct {
	Endpoint *Endpoint
	// Config is the endpoint's settings the delivery goes with; nil for
	// the safety net's deliveries, which carry none (their endpoint's
	// current ones, when it exists, say its tenant and incarnation).
	Config *config.Endpoint
	Event  *Event
	State  State
	Data   []byte
	Header nats.Header
	// Done settles its source exactly once: true when the delivery is
	// finished with (delivered, dead-lettered, or handed on as a task),
	// false when it must come back (a failure of NATS or a shutdown).
	Done func(ok bool)
	// Again, for the ordered lane's deliveries, stores the retry due
	// after wait in the lane instead of as a schedule (dispatch/lane).
	Again func(wait time.Duration)
	Dead  bool // dead-lettered: set before Done
}

// Log logs msg at level with the delivery's endpoint, event id and type.
func (dl *Delivery) Log(l *slog.Logger, level slog.Level, msg string, args ...any) {
	ctx := context.Background()
	if !l.Enabled(ctx, level) {
		return
	}
	attrs := append([]any{"endpoint", dl.Endpoint.ID, "event_id", dl.Event.ID, "event_type", dl.Event.Type}, args...)
	l.Log(ctx, level, msg, attrs...)
}

// Forgotten settles dl, storing nothing, when its endpoint was deleted
// through the admin API while dl was in flight: no one would take a task of
// it, and an endpoint created again with the id would.
func (dl *Delivery) Forgotten() bool {
	if !dl.Endpoint.Deleted.Load() {
		return false
	}
	dl.Done(true)
	return true
}

package dispatch

import (
	"context"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// Waiting deliveries are bounded twice: streams.tasks_max_bytes caps
// HOOKJET_TASKS (whose own limit sits above it, so the server, which
// drops the oldest messages of a stream that allows schedules, never gets
// to drop a task), and each endpoint's max_backlog caps its waiting
// deliveries. A delivery that would pass either is dead-lettered with
// reason overflow at once: every delivery an endpoint was owed is
// delivered, waiting, or in the DLQ.
//
// The stream's bytes are read from the server every housekeeping tick and
// what this process stores in between is added; an endpoint's backlog is
// this process's count of the tasks it stored and not yet consumed, raised
// to the server's count of its parked tasks at every rescan.

// taskOverhead is what a task costs in the stream besides its payload:
// subject, headers and the store's record framing, generously.
const taskOverhead = 1024

// housekeeping is how often the task stream's size is read and the event
// log is checked for trimming.
const housekeeping = time.Second

// reserve takes room for dl's task in its endpoint's max_backlog and in
// streams.tasks_max_bytes, or dead-letters dl with reason overflow when
// either is reached (and reports false). A reservation that is not stored
// after all is given back with unreserve.
func (d *Dispatcher) reserve(dl *delivery) bool {
	var why string
	size := int64(len(dl.data)) + taskOverhead
	limit := dl.s.ep.MaxBacklog
	if n := dl.e.backlog.Add(1); limit > 0 && n > int64(limit) {
		dl.e.backlog.Add(-1)
		why = fmt.Sprintf("the endpoint's backlog reached max_backlog (%d waiting deliveries)", limit)
	} else if used := d.tasksUsed.Add(size); used > d.tasksMax {
		d.unreserve(dl)
		why = fmt.Sprintf("HOOKJET_TASKS reached streams.tasks_max_bytes (%d bytes)", d.tasksMax)
	} else {
		return true
	}
	if dl.st.Error != "" {
		why += "; last error: " + dl.st.Error
	}
	dl.st.Error = why
	d.deadLetter(dl, "overflow")
	return false
}

// unreserve gives back what reserve took for dl.
func (d *Dispatcher) unreserve(dl *delivery) {
	dl.e.consumed()
	d.tasksUsed.Add(-(int64(len(dl.data)) + taskOverhead))
}

// consumed counts one of e's tasks taken off the stream (delivered,
// dead-lettered, rescheduled or expired).
func (e *endpoint) consumed() {
	if e.backlog.Add(-1) < 0 {
		e.backlog.Store(0) // a task stored before a restart or by another process
	}
}

// runHousekeeping reads HOOKJET_TASKS' size and trims the event log, every
// housekeeping tick until ctx ends.
func (d *Dispatcher) runHousekeeping(ctx context.Context) {
	t := time.NewTicker(housekeeping)
	defer t.Stop()
	for {
		d.readTaskBytes(ctx)
		d.trimEvents(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (d *Dispatcher) readTaskBytes(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(ctx, jetstream.TasksStream)
	if err != nil {
		d.log.Debug("read task stream size", "err", err)
		return
	}
	d.tasksUsed.Store(int64(st.CachedInfo().State.Bytes))
}

// trimLevel is the share of streams.max_bytes past which the event log is
// trimmed, and trimTarget the share it is trimmed down to.
const (
	trimLevel  = 0.9
	trimTarget = 0.8
)

// trimEvents keeps HOOKJET_EVENTS from refusing producers because it is
// full of delivered events: past trimLevel of streams.max_bytes it removes
// the oldest events below the fan-out consumer's ack floor (every delivery
// of those is settled: delivered, dead-lettered, or a task that carries its
// own copy of the payload), down to trimTarget. Undelivered events are never
// removed, so a producer is refused only when they alone fill the log.
func (d *Dispatcher) trimEvents(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	st, err := d.o.JS.Stream(ctx, jetstream.EventsStream)
	if err != nil {
		return
	}
	info := st.CachedInfo()
	limit := float64(info.Config.MaxBytes)
	state := info.State
	if limit <= 0 || float64(state.Bytes) < trimLevel*limit || state.Msgs == 0 {
		return
	}
	c, err := d.o.JS.Consumer(ctx, jetstream.EventsStream, jetstream.FanoutConsumer)
	if err != nil {
		return
	}
	floor := c.CachedInfo().AckFloor.Stream
	d.fanoutFloor.Store(floor)
	avg := float64(state.Bytes) / float64(state.Msgs)
	drop := uint64((float64(state.Bytes)-trimTarget*limit)/avg) + 1
	upTo := min(state.FirstSeq+drop, floor+1) // removes the messages below upTo
	if upTo <= state.FirstSeq {
		return
	}
	if err := st.Purge(ctx, natsjs.WithPurgeSequence(upTo)); err != nil {
		d.log.Warn("trim the event log", "err", err)
		return
	}
	d.o.Metrics.Trimmed.Add(float64(upTo - state.FirstSeq))
	d.log.Info("event log trimmed below the delivered floor", "stream", jetstream.EventsStream, "removed_below_seq", upTo, "bytes", state.Bytes, "max_bytes", info.Config.MaxBytes)
}

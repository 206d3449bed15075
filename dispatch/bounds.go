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

// endpointShare is the part of streams.tasks_max_bytes one endpoint's
// waiting deliveries may take: a dead endpoint that matches everything
// fills at most half, and the others still park what they must.
const endpointShare = 2

// busyCause reports whether a delivery parked for cause waits only because
// its endpoint is busy (its in-flight cap, the worker pool, a timeout too
// long for the fan-out, NATS redeliveries), not because it fails, is
// disabled or rate-limited: such a delivery never counts toward the
// endpoint's max_backlog or its share of streams.tasks_max_bytes, so an
// endpoint that keeps answering 2xx is never dead-lettered as overflow by
// its own burst.
func busyCause(cause string) bool {
	switch cause {
	case "in_flight", "concurrency", "slow", "redelivered":
		return true
	}
	return false
}

// reserve takes room for dl's task in its endpoint's max_backlog, its
// share of streams.tasks_max_bytes and streams.tasks_max_bytes, or
// dead-letters dl with reason overflow when one is reached (and reports
// false). A busy task (see busyCause) takes room in streams.tasks_max_bytes
// only. A reservation that is not stored after all is given back with
// unreserve.
func (d *Dispatcher) reserve(dl *delivery, busy bool) bool {
	var why string
	size := taskSize(len(dl.data))
	limit := dl.s.ep.MaxBacklog
	e := dl.e
	if busy {
		e.busy.Add(1)
		if d.tasks.used.Reserve(size, d.tasks.max) {
			return true
		}
		e.consumed(size, true)
		return d.overflow(dl, fmt.Sprintf("HOOKJET_TASKS reached streams.tasks_max_bytes (%d bytes)", d.tasks.max))
	}
	n := e.backlog.Add(1)
	b := e.backlogBytes.Add(size)
	switch {
	case limit > 0 && n > int64(limit):
		why = fmt.Sprintf("the endpoint's backlog reached max_backlog (%d waiting deliveries)", limit)
	case b > d.tasks.max/endpointShare:
		why = fmt.Sprintf("the endpoint's waiting deliveries reached 1/%d of streams.tasks_max_bytes (%d bytes)", endpointShare, d.tasks.max/endpointShare)
	default:
		if d.tasks.used.Reserve(size, d.tasks.max) {
			return true
		}
		why = fmt.Sprintf("HOOKJET_TASKS reached streams.tasks_max_bytes (%d bytes)", d.tasks.max)
	}
	e.consumed(size, false)
	return d.overflow(dl, why)
}

// overflow dead-letters dl with reason overflow, because of why; it
// reports false, what reserve returns then.
func (d *Dispatcher) overflow(dl *delivery, why string) bool {
	if dl.st.Error != "" {
		why += "; last error: " + dl.st.Error
	}
	dl.st.Error = why
	d.deadLetter(dl, "overflow")
	return false
}

// unreserve gives back what reserve(dl, busy) took.
func (d *Dispatcher) unreserve(dl *delivery, busy bool) {
	size := taskSize(len(dl.data))
	dl.e.consumed(size, busy)
	d.tasks.used.Release(size)
}

// stored counts dl's reserved task as stored: the server holds it now.
func (d *Dispatcher) stored(dl *delivery) {
	d.tasks.used.Stored(taskSize(len(dl.data)))
}

// taskSize is what a task of a payload of n bytes takes in HOOKJET_TASKS.
func taskSize(n int) int64 { return int64(n) + taskOverhead }

// consumed counts one of e's tasks, of size bytes, taken off the stream
// (delivered, dead-lettered, rescheduled or expired); busy: a busy task
// (see busyCause), counted apart.
func (e *endpoint) consumed(size int64, busy bool) {
	// Tasks stored before a restart or by another process were never
	// counted here: the counts stop at zero.
	if busy {
		if e.busy.Add(-1) < 0 {
			e.busy.Store(0)
		}
		return
	}
	if e.backlog.Add(-1) < 0 {
		e.backlog.Store(0)
	}
	if e.backlogBytes.Add(-size) < 0 {
		e.backlogBytes.Store(0)
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
	if err := d.tasks.used.Read(ctx, d.o.JS); err != nil {
		d.log.Debug("read task stream size", "err", err)
	}
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
	d.fan.floor.Store(floor)
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

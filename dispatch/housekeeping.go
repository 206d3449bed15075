package dispatch

import (
	"context"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// housekeeping is how often the task stream's size is read (the bounds of
// waiting deliveries: package settle, bounds.go) and the event log is
// checked for trimming.
const housekeeping = time.Second

// runHousekeeping reads HOOKJET_TASKS' size and trims the event log, every
// housekeeping tick until ctx ends.
func (d *Dispatcher) runHousekeeping(ctx context.Context) {
	t := time.NewTicker(housekeeping)
	defer t.Stop()
	for {
		if err := d.tasks.Read(ctx, d.o.JS); err != nil {
			d.log.Debug("read task stream size", "err", err)
		}
		d.trimEvents(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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

package dispatch

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/dispatch/consume"
)

// fanout is the fan-out room: the shared consumer of HOOKJET_EVENTS pulled
// ahead (pull.go, the ahead queue), each event matched (the match stage)
// and its deliveries routed through the admit stage, parked, or handed to
// the ordered lane; the event acked once they are all settled (fanEvent),
// slow deliveries guarded so it can be (guard.go), and with nats.url the
// acks' answers awaited before an attempt (ackproof.go).
type fanout struct {
	log      *slog.Logger
	now      func() time.Time
	js       natsjs.JetStream
	conn     *nats.Conn // the connection it pulls and acks on
	metrics  *Metrics
	ledger   *dedupe.Ledger
	shared   *sharedSeen // nil with the embedded server: one process, the local ledger suffices
	match    matcher
	eps      endpointSource
	settle   settler
	gate     *admitter
	ordered  laneQueue
	jobs     func(func()) // the pool of background NATS work (jobs.go)
	sendCtx  context.Context
	inflight *sync.WaitGroup
	maxMsg   int // the largest event the streams take

	unsettled chan struct{} // fan-out events not yet settled in this process
	// unsettledBytes bounds their payload bytes.
	unsettledBytes *consume.Budget
	ackWait        time.Duration
	// hold (nanoseconds) is how long after its pull a fan-out delivery may
	// still be attempted: half of ackWait (late).
	hold atomic.Int64
	acks *consume.AckProof // with nats.url, from Run; nil when embedded (ackproof.go)
	// floor is the fan-out consumer's ack floor when last looked at
	// (start, and every gauge refresh): a fan-out consumer deleted from
	// under hookjet starts again after it.
	floor  atomic.Uint64
	cons   natsjs.Consumer // made by Start, pulled by Run
	guards guards          // fan-out deliveries in flight (guard.go)
}

// endpointSource is the endpoints in force and their current settings
// (dispatcher.go).
type endpointSource interface {
	endpointFinder
	current(e *endpoint) *settings
}

// laneQueue is the ordered lane: it takes the deliveries of endpoints with
// ordering: key (lane_engine.go, package dispatch/lane).
type laneQueue interface {
	enqueue(dl *delivery)
}

// late reports whether dl, a fan-out delivery about to be attempted, could
// no longer be settled in time: its event was pulled longer ago than half
// the fan-out's AckWait (this process was paused, or starved: the server
// has handed the event, or is about to hand it, to another process), or
// the NATS connection is down, so its ack cannot be sent now, or the
// server has not confirmed reading the acks written before. The checks
// are made holding an in-flight slot of the endpoint, so a pause or a
// partition right after them repeats at most max_in_flight deliveries
// there; without them every event the process holds unsettled (up to
// 2 x worker.concurrency) could be.
func (d *fanout) late(dl *delivery) bool {
	if dl.fan == nil {
		return false
	}
	if time.Since(dl.fan.pulled) > time.Duration(d.hold.Load()) {
		return true
	}
	if d.acks == nil {
		// The embedded server's in-process connection: it is not cut
		// while the process runs, and asking it (IsConnected) would wait
		// for the connection's lock, held while the flusher hands its
		// buffer to the server through a synchronous pipe.
		return false
	}
	if !d.conn.IsConnected() {
		return true
	}
	// The acks written before may have been lost in a silent partition or
	// with a failed cluster node (ackproof.go): wait for their answers,
	// at most until the delivery would be late.
	return !d.acks.Confirmed(dl.fan.pulled.Add(time.Duration(d.hold.Load())))
}

// ackDelivered acks a fan-out event whose deliveries were made: with
// nats.url through the proof, asking for an answer.
func (d *fanout) ackDelivered(msg natsjs.Msg) error {
	if d.acks == nil {
		return msg.Ack()
	}
	return d.acks.Ack(msg.Reply())
}

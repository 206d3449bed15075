package jetstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/publish"
)

// PublishPrefix is the subject of publish requests: a request to
// hookjet.publish.<type> stores an event of that type and is answered once
// it is stored (package publish).
const PublishPrefix = "hookjet.publish."

// PublishQueue is the queue group of the publish responders: one process
// answers each request.
const PublishQueue = "hookjet-publish"

// OrderingKey is the ordering key of an event, task or dead letter with
// headers h; "" when it has none (or one publish.CheckKey refuses).
func OrderingKey(h nats.Header) string { return publish.KeyOf(h) }

// publishTimeout bounds the wait for one PubAck of an event publish.
const publishTimeout = 10 * time.Second

// EventPublisher implements [publish.Store]: it stores a batch of events in
// HOOKJET_EVENTS either as one atomic batch (one synced write for the
// batch on a server that syncs always) or one by one, asynchronously (a
// synced write each), whichever it measured to cost less for a batch of
// that size: on an R1 stream nats-server stages every atomic batch in a
// store of its own on disk, which costs about as much as a dozen synced
// single writes whatever the batch's size, and much more than a lazily
// synced single write. A batch the server refuses because an id in it was
// stored before is split in halves until the duplicates stand alone; a
// single event, and every event when the stream takes no atomic batches,
// is published on its own.
type EventPublisher struct {
	nc     *nats.Conn
	js     natsjs.JetStream
	atomic atomicState
	costs  costs
}

// costs learns what storing costs each way: a moving average per event
// published one by one and per atomic batch.
type costs struct {
	mu    sync.Mutex
	each  time.Duration // per event one by one; 0: not measured yet
	batch time.Duration // per atomic batch; 0: not measured yet
	n     int           // choices made, for the periodic probe
}

// probeEvery is how often (in batches) the way that costs more is tried
// again, so that a change (a disk under load, a sync mode) is noticed.
const probeEvery = 50

// useAtomic reports whether a batch of k events should go as one atomic
// batch.
func (c *costs) useAtomic(k int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	switch {
	case c.batch == 0:
		return true
	case c.each == 0:
		return false
	}
	cheaper := time.Duration(k)*c.each > c.batch
	if c.n%probeEvery == 0 {
		return !cheaper
	}
	return cheaper
}

// record adds a measurement: d for k events one by one, or for one atomic
// batch.
func (c *costs) record(atomic bool, k int, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	avg := func(old, v time.Duration) time.Duration {
		if old == 0 {
			return v
		}
		return (4*old + v) / 5
	}
	if atomic {
		c.batch = avg(c.batch, d)
	} else if k > 0 {
		c.each = avg(c.each, d/time.Duration(k))
	}
}

// NewEventPublisher returns an EventPublisher on nc.
func NewEventPublisher(nc *nats.Conn) (*EventPublisher, error) {
	js, err := natsjs.New(nc,
		natsjs.WithPublishAsyncMaxPending(publish.MaxBatch),
		natsjs.WithPublishAsyncTimeout(publishTimeout))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	return &EventPublisher{nc: nc, js: js}, nil
}

// Store implements [publish.Store].
func (p *EventPublisher) Store(ctx context.Context, events []publish.Event) []publish.Result {
	msgs := make([]*nats.Msg, len(events))
	for i := range events {
		msgs[i] = eventMsg(EventsPrefix, &events[i])
	}
	results := make([]publish.Result, len(events))
	if len(events) > 1 && p.atomic.allowed(ctx, p.js) && p.costs.useAtomic(len(events)) {
		p.storeAtomic(ctx, msgs, results)
	} else {
		p.storeEach(ctx, msgs, results)
	}
	return results
}

// eventMsg is the NATS message of e on prefix+e.Type (EventsPrefix to
// store it, PublishPrefix to request it stored), with its id when it has
// one, tenant, key and further headers.
func eventMsg(prefix string, e *publish.Event) *nats.Msg {
	m := nats.NewMsg(prefix + e.Type)
	for k, v := range e.Header {
		m.Header[k] = v
	}
	if e.ID != "" {
		m.Header.Set(HdrMsgID, e.ID)
	}
	if e.Tenant != "" {
		m.Header.Set(HdrTenant, e.Tenant)
	}
	if e.Key != "" {
		m.Header.Set(publish.HeaderKey, e.Key)
	}
	m.Data = e.Data
	return m
}

// storeAtomic stores msgs as one atomic batch and fills results. A batch
// refused for a duplicate id is split in halves; a single message goes on
// its own.
func (p *EventPublisher) storeAtomic(ctx context.Context, msgs []*nats.Msg, results []publish.Result) {
	if len(msgs) == 1 {
		p.storeEach(ctx, msgs, results)
		return
	}
	t0 := time.Now()
	ack, err := sendAtomic(ctx, p.nc, msgs, publishTimeout)
	switch {
	case err == nil:
		p.costs.record(true, len(msgs), time.Since(t0))
		first := ack.Seq - uint64(len(msgs)) + 1
		for i := range results {
			results[i] = publish.Result{Stream: ack.Stream, Seq: first + uint64(i)}
		}
	case ack.ErrCode == errAtomicDuplicate || ack.ErrCode == errDuplicatePending:
		h := len(msgs) / 2
		p.storeAtomic(ctx, msgs[:h], results[:h])
		p.storeAtomic(ctx, msgs[h:], results[h:])
	case ack.ErrCode == errAtomicDisabled:
		p.atomic.state.Store(2)
		p.storeEach(ctx, msgs, results)
	default:
		for i := range results {
			results[i].Err = fmt.Errorf("%w: %w", publish.ErrUnavailable, err)
		}
	}
}

// storeEach publishes msgs one by one, asynchronously, and waits for every
// PubAck.
func (p *EventPublisher) storeEach(ctx context.Context, msgs []*nats.Msg, results []publish.Result) {
	t0 := time.Now()
	failed := false
	publishEach(ctx, p.js, msgs, func(i int, ack *natsjs.PubAck, err error) {
		if err != nil {
			failed = true
			results[i].Err = fmt.Errorf("%w: %w", publish.ErrUnavailable, err)
			return
		}
		results[i] = publish.Result{Stream: ack.Stream, Seq: ack.Sequence, Duplicate: ack.Duplicate}
	})
	if !failed {
		p.costs.record(false, len(msgs), time.Since(t0))
	}
}

// publishEach publishes msgs (nil ones are skipped) asynchronously through
// js, then waits for each PubAck in turn and calls done with message i's
// ack, or with the error of its publish, of its ack, or of ctx when it ends
// first. done runs on the caller's goroutine.
func publishEach(ctx context.Context, js natsjs.JetStream, msgs []*nats.Msg, done func(i int, ack *natsjs.PubAck, err error)) {
	futures := make([]natsjs.PubAckFuture, len(msgs))
	for i, m := range msgs {
		if m == nil {
			continue
		}
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			done(i, nil, err)
			continue
		}
		futures[i] = f
	}
	for i, f := range futures {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			done(i, ack, nil)
		case err := <-f.Err():
			done(i, nil, err)
		case <-ctx.Done():
			done(i, nil, ctx.Err())
		}
	}
}

// Answerer answers one publish request (package publish's Committer).
type Answerer interface {
	// Answer stores the event of a request to hookjet.publish.<typ> and
	// returns the reply's body.
	Answer(ctx context.Context, typ string, h map[string][]string, data []byte) []byte
}

// PublishResponder answers the publish requests of hookjet.publish.>, in
// queue group [PublishQueue]. Each request is answered on a goroutine of
// its own (at most maxInFlight at once), so that concurrent requests share
// a batch.
type PublishResponder struct {
	sub     *nats.Subscription
	sem     chan struct{}
	wg      sync.WaitGroup
	log     *slog.Logger
	stop    chan struct{}
	mu      sync.Mutex // guards stopped, so that no wg.Add follows Stop's Wait
	stopped bool
}

// ServePublish subscribes to publish requests on nc and answers each
// through a, with at most maxInFlight requests waiting for their answer at
// once (the subscription holds back the rest).
func ServePublish(nc *nats.Conn, a Answerer, maxInFlight int, log *slog.Logger) (*PublishResponder, error) {
	r := &PublishResponder{sem: make(chan struct{}, max(maxInFlight, 1)), log: log, stop: make(chan struct{})}
	sub, err := nc.QueueSubscribe(PublishPrefix+">", PublishQueue, func(m *nats.Msg) {
		r.mu.Lock()
		if r.stopped {
			r.mu.Unlock()
			return // shutting down: the requester times out and retries
		}
		r.wg.Add(1)
		r.mu.Unlock()
		select {
		case r.sem <- struct{}{}:
		case <-r.stop:
			r.wg.Done()
			return
		}
		go func() {
			defer func() { <-r.sem; r.wg.Done() }()
			r.answer(a, m)
		}()
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe to %s>: %w", PublishPrefix, err)
	}
	// The responders' backlog is bounded by sem, not by the client's
	// default pending limits.
	if err := sub.SetPendingLimits(-1, 256<<20); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe to %s>: %w", PublishPrefix, err)
	}
	// Once it returns, a request from any connection finds a responder:
	// the server has the subscription (a request sent before the SUB
	// reached it would be answered "no responders").
	if err := nc.FlushTimeout(5 * time.Second); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("subscribe to %s>: %w", PublishPrefix, err)
	}
	r.sub = sub
	return r, nil
}

// answer stores one request's event and sends the reply.
func (r *PublishResponder) answer(a Answerer, m *nats.Msg) {
	if m.Reply == "" {
		return // a plain publish to the request subject: no one waits for an answer
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := a.Answer(ctx, strings.TrimPrefix(m.Subject, PublishPrefix), m.Header, m.Data)
	if err := m.Respond(body); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		r.log.Warn("publish: reply not sent", "err", err)
	}
}

// Stop stops taking requests and waits for those taken to be answered.
// Call it before the committer behind the Answerer closes.
func (r *PublishResponder) Stop() {
	if err := r.sub.Unsubscribe(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) && !errors.Is(err, nats.ErrBadSubscription) {
		r.log.Warn("publish: unsubscribe", "err", err)
	}
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	close(r.stop)
	r.wg.Wait()
}

// PublishRequest stores e through hookjet's publish responders (a request
// to hookjet.publish.<type>) and returns the answer once it is stored. An
// empty e.ID lets hookjet choose one (the answer's ID); e.Header (nil:
// none) adds headers such as Content-Type or traceparent. A refusal is a
// [*publish.ReplyError].
func PublishRequest(ctx context.Context, nc *nats.Conn, e publish.Event) (publish.Reply, error) {
	resp, err := nc.RequestMsgWithContext(ctx, eventMsg(PublishPrefix, &e))
	if errors.Is(err, nats.ErrNoResponders) {
		return publish.Reply{}, fmt.Errorf("no hookjet answers on %s> (is hookjet serve running on this NATS?): %w", PublishPrefix, err)
	}
	if err != nil {
		return publish.Reply{}, err
	}
	return publish.ParseReply(resp.Data)
}

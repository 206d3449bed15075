package opsevent

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/jetstream"
)

// Store is where a Publisher stores its events (natsjs.JetStream).
type Store interface {
	PublishMsg(ctx context.Context, msg *nats.Msg, opts ...natsjs.PublishOpt) (*natsjs.PubAck, error)
}

// Options are what a Publisher is made with.
type Options struct {
	// Store stores the events in HOOKJET_EVENTS.
	Store Store
	// Key marks them as hookjet's own.
	Key Key
	// Now is the clock of the dead letters' minutes: which minute one
	// counts in, and when that minute is over; nil: time.Now.
	Now func() time.Time
	// Log receives a warning for an event that could not be stored; nil:
	// nothing is logged.
	Log *slog.Logger
}

// Limits of a Publisher.
const (
	// queueLen bounds the events waiting to be stored; one more is
	// dropped and logged (hookjet.ops.* still has it).
	queueLen = 1024
	// window is the time one hookjet.dead_letter covers per endpoint.
	window = time.Minute
	// storeTries is how often an event is offered to JetStream.
	storeTries = 3
)

// Publisher stores hookjet's own events as ordinary events in
// HOOKJET_EVENTS: an endpoint's changes at once, its dead letters once a
// minute with their count. Announce never waits; Run stores.
type Publisher struct {
	store Store
	key   Key
	now   func() time.Time
	log   *slog.Logger
	queue chan *nats.Msg
	kick  chan struct{} // a first dead letter: Run starts looking at the clock

	mu     sync.Mutex
	minute map[string]*tally // endpoint id -> its dead letters of the minute; only endpoints that had one
	oldest time.Time         // the earliest start in minute; zero when it is empty
}

// tally is one endpoint's dead letters in the minute that starts at start.
type tally struct {
	ep     Subject
	start  time.Time
	count  int
	reason string
}

// New returns a Publisher; Run stores what it announces.
func New(o Options) *Publisher {
	p := &Publisher{
		store: o.Store, key: o.Key, now: o.Now, log: o.Log,
		queue: make(chan *nats.Msg, queueLen), kick: make(chan struct{}, 1), minute: map[string]*tally{},
	}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	return p
}

// Announce turns the operational event hookjet.ops.<kind> about endpoint ep
// (endpoint.disabled, endpoint.enabled, endpoint.opened, endpoint.closed,
// dead_letter) into hookjet's own event: a change of the endpoint at at,
// stored at once; a dead letter, counted in the current minute (by
// Options.Now). Other kinds (half_opened, reset) have none. It never
// waits.
func (p *Publisher) Announce(kind string, ep Subject, reason string, at time.Time) {
	typ := typeOf(kind)
	switch typ {
	case "":
		return
	case TypeDeadLetter:
		p.deadLetter(ep, reason)
		return
	}
	at = at.UTC()
	p.enqueue(p.message(Payload{
		Type: typ, Endpoint: Endpoint{ID: ep.ID, Description: ep.Description}, Tenant: ep.Tenant, Reason: reason, Count: 1, At: at,
	}, typ+":"+ep.ID+":"+at.Format(idTime)))
}

// deadLetter counts a dead letter of ep in the current minute.
func (p *Publisher) deadLetter(ep Subject, reason string) {
	start := p.now().UTC().Truncate(window)
	p.mu.Lock()
	t := p.minute[ep.ID]
	var over *tally
	if t != nil && !t.start.Equal(start) {
		over, t = t, nil // an earlier minute Run has not stored yet
	}
	first := false
	if t == nil {
		t = &tally{start: start}
		p.minute[ep.ID] = t
		if first = p.oldest.IsZero(); first || start.Before(p.oldest) {
			p.oldest = start
		}
	}
	t.ep, t.reason = ep, reason
	t.count++
	p.mu.Unlock()
	if over != nil {
		p.enqueue(p.tallied(over))
	}
	if first { // Run starts looking at the clock
		select {
		case p.kick <- struct{}{}:
		default:
		}
	}
}

// The times in event ids: <type>:<endpoint>:<time>, no character a URL
// path would have to escape.
const (
	idTime   = "20060102T150405.000000000Z"
	idMinute = "20060102T1504Z"
)

// tallied is the hookjet.dead_letter event of t. Its id is the endpoint
// and the minute: every process's event of that minute is one event.
func (p *Publisher) tallied(t *tally) *nats.Msg {
	return p.message(Payload{
		Type: TypeDeadLetter, Endpoint: Endpoint{ID: t.ep.ID, Description: t.ep.Description}, Tenant: t.ep.Tenant,
		Reason: t.reason, Count: t.count, At: t.start,
	}, TypeDeadLetter+":"+t.ep.ID+":"+t.start.Format(idMinute))
}

// message is the event with payload pl and id, marked as hookjet's own.
func (p *Publisher) message(pl Payload, id string) *nats.Msg {
	data, _ := json.Marshal(pl) // strings, an int and a time: cannot fail
	m := nats.NewMsg(jetstream.EventsPrefix + pl.Type)
	m.Data = data
	m.Header.Set(jetstream.HdrMsgID, id)
	m.Header.Set(jetstream.HdrContentType, "application/json")
	if pl.Tenant != "" {
		m.Header.Set(jetstream.HdrTenant, pl.Tenant)
	}
	m.Header.Set(HeaderMark, p.key.Mark(id, pl.Type, pl.Tenant, data))
	return m
}

func (p *Publisher) enqueue(m *nats.Msg) {
	select {
	case p.queue <- m:
	default:
		p.log.Warn("operational event dropped: too many waiting to be stored", "type", m.Subject[len(jetstream.EventsPrefix):], "id", m.Header.Get(jetstream.HdrMsgID))
	}
}

// Run stores the announced events and, when each minute is over, the
// minute's hookjet.dead_letter per endpoint, until ctx ends; then it
// stores what is left (the current minute's counts too) within 5 s and
// returns.
func (p *Publisher) Run(ctx context.Context) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var due <-chan time.Time
		if d, ok := p.untilDue(); ok {
			timer.Reset(d)
			due = timer.C
		}
		select {
		case <-ctx.Done():
			timer.Stop()
			p.finish(ctx)
			return
		case m := <-p.queue:
			p.put(context.WithoutCancel(ctx), m)
		case <-p.kick:
		case <-due:
			for _, m := range p.over(p.now()) {
				p.put(context.WithoutCancel(ctx), m)
			}
		}
		timer.Stop()
	}
}

// untilDue is how long until the earliest counted minute is over, looked
// at again at least every second (the clock may be moved); ok is false
// when nothing is counted.
func (p *Publisher) untilDue() (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.oldest.IsZero() {
		return 0, false
	}
	return max(min(time.Second, p.oldest.Add(window).Sub(p.now())), 0), true
}

// over takes the counts of the minutes over at now (every one when now is
// zero) and returns their events.
func (p *Publisher) over(now time.Time) []*nats.Msg {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*nats.Msg
	p.oldest = time.Time{}
	for id, t := range p.minute {
		if now.IsZero() || !now.Before(t.start.Add(window)) {
			out = append(out, p.tallied(t))
			delete(p.minute, id)
		} else if p.oldest.IsZero() || t.start.Before(p.oldest) {
			p.oldest = t.start
		}
	}
	return out
}

// finish stores what is queued and every count, within 5 s.
func (p *Publisher) finish(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for len(p.queue) > 0 {
		p.put(ctx, <-p.queue)
	}
	for _, m := range p.over(time.Time{}) {
		p.put(ctx, m)
	}
}

// put stores m, offering it storeTries times while ctx lasts.
func (p *Publisher) put(ctx context.Context, m *nats.Msg) {
	var err error
	for i := range storeTries {
		if i > 0 && !pause(ctx, time.Duration(i)*200*time.Millisecond) {
			break
		}
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err = p.store.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			return
		}
	}
	p.log.Warn("operational event not stored", "type", m.Subject[len(jetstream.EventsPrefix):], "id", m.Header.Get(jetstream.HdrMsgID), "err", err)
}

// pause waits for d and reports whether ctx lasted that long.
func pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

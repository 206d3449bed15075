package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"golang.org/x/time/rate"
)

// ackedEvent is an event whose PubAck arrived: hookjet owes it to every
// endpoint that matches its type.
type ackedEvent struct {
	id, typ string
}

// load publishes events at a steady rate, as a careful producer does: every
// event has a Nats-Msg-Id, a publish waits at most pubTimeout for its
// PubAck, and a failed publish is repeated with the same id until it is
// acknowledged. Only an acknowledged event counts, and each one is written
// to the acked log ("<id> <type>") as its PubAck arrives.
type load struct {
	js      natsjs.JetStream
	prefix  string
	limiter *rate.Limiter

	mu    sync.Mutex
	acked []ackedEvent
	log   *bufio.Writer
	file  *os.File

	next                         atomic.Int64
	retries, duplicates, givenUp atomic.Int64
}

const pubTimeout = 2 * time.Second

// connectProducer connects the load's own client straight to the cluster
// (no proxy): it reconnects for ever and notices a dead or paused server
// within a second.
func connectProducer(url string) (*nats.Conn, natsjs.JetStream, error) {
	nc, err := nats.Connect(url, nats.Name("soak-producer"), nats.MaxReconnects(-1),
		nats.ReconnectWait(100*time.Millisecond), nats.PingInterval(300*time.Millisecond), nats.MaxPingsOutstanding(3))
	if err != nil {
		return nil, nil, err
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return nc, js, nil
}

func newLoad(js natsjs.JetStream, prefix, ackedPath string, perSecond float64) (*load, error) {
	f, err := os.Create(ackedPath)
	if err != nil {
		return nil, err
	}
	return &load{js: js, prefix: prefix, limiter: rate.NewLimiter(rate.Limit(perSecond), 1), log: bufio.NewWriter(f), file: f}, nil
}

// run publishes from workers goroutines until ctx ends; an event being
// retried when ctx ends gets until drain ends to be acknowledged.
func (l *load) run(ctx, drain context.Context, workers int) {
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for l.limiter.Wait(ctx) == nil {
				n := l.next.Add(1) - 1
				ev := ackedEvent{id: fmt.Sprintf("%s-%07d", l.prefix, n), typ: eventTypes[n%int64(len(eventTypes))]}
				if l.publish(drain, ev) {
					l.record(ev)
				}
			}
		})
	}
	wg.Wait()
}

// publish repeats the publish of ev with the same id until it is
// acknowledged (true) or ctx ends (false).
func (l *load) publish(ctx context.Context, ev ackedEvent) bool {
	body := fmt.Appendf(nil, `{"id":%q,"type":%q,"at":%q}`, ev.id, ev.typ, time.Now().UTC().Format(time.RFC3339Nano))
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			l.retries.Add(1)
		}
		pctx, cancel := context.WithTimeout(ctx, pubTimeout)
		ack, err := l.js.Publish(pctx, "hookjet.events."+ev.typ, body, natsjs.WithMsgID(ev.id))
		cancel()
		if err == nil {
			if ack.Duplicate {
				l.duplicates.Add(1)
			}
			return true
		}
		if ctx.Err() != nil {
			l.givenUp.Add(1)
			return false
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
}

func (l *load) record(ev ackedEvent) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acked = append(l.acked, ev)
	fmt.Fprintf(l.log, "%s %s\n", ev.id, ev.typ)
}

// events returns the acknowledged events.
func (l *load) events() []ackedEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ackedEvent(nil), l.acked...)
}

func (l *load) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	err := l.log.Flush()
	if cerr := l.file.Close(); err == nil {
		err = cerr
	}
	return err
}

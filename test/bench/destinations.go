package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/internal/rabbittest"
	hjs "github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/signature"
)

// The destinations scenario (issue 50): for each broker type, the same
// client library publishing directly to the same broker (the baseline);
// then a JetStream-only relay (events stored in a stream, consumed, each
// published to the broker and acked after the broker's answer: what any
// system that stores before it acknowledges and then forwards pays);
// then hookjet delivering as many events to 10 endpoints of that type on
// that broker, in the same run; then 10,000 idle NATS endpoints for memory
// and connections. Broker runs count an event delivered once the broker
// acknowledged it: the direct client's and the relay's own acks, the
// broker's count of stored messages for hookjet's NATS and RabbitMQ runs
// (hookjet_attempts_total{class="success"} for Kafka). The target is
// emptied before each run.
//
// hookjet and the relay run with nats.sync destSync: the broker runs
// compare delivery paths, and the embedded server's fsync per stored
// message (no group commit, ../shared/JETSTREAM.md) is the sync
// scenarios' subject (healthy10 vs healthy10fast), not this one's.

// destSync is nats.sync of hookjet and the relay in this scenario.
const destSync = "2m"

// destIdleEndpoints is the endpoint count of the idle run.
const destIdleEndpoints = 10000

// destEvents are the events of each broker run.
func (p params) destEvents() int {
	if p.quick {
		return 3000
	}
	return 20000
}

// brokerRun says how to reach one broker: publish sends event n of run
// (its message id is run:event id where the broker dedupes) and waits for
// the broker's answer; reset empties the target; count, where set, is how
// many messages the target holds; destination is an endpoint's
// destination YAML.
type brokerRun struct {
	typ         string
	publish     func(ctx context.Context, run string, n int, body []byte, hs []destination.Header) error
	reset       func(ctx context.Context) error
	count       func(ctx context.Context) (int64, error)
	destination string
	close       func()
	// ns is the second nats-server of a nats run: the idle run counts its
	// connections.
	ns *natsserver.Server
}

func (b *bench) destinationScenarios(ctx context.Context) map[string][]runFunc {
	// hookjet's own ceiling in this run: as many events to 10 webhook
	// endpoints, the reference each broker type's rate is also put beside.
	events := b.p.destEvents()
	runs := []runFunc{func() (*result, error) {
		return b.throughput(ctx, throughputSpec{name: "dest-webhook",
			description: fmt.Sprintf("hookjet delivering %d events to 10 webhook endpoints (the reference for the broker types), max_in_flight %d", events, b.p.maxInFlight),
			behave:      allHealthy(10), events: events, maxInFlight: b.p.maxInFlight, bound: 45 * time.Second, sync: destSync})
	}}
	for _, typ := range []string{"nats", "rabbitmq", "kafka"} {
		var br *brokerRun
		var startErr error
		start := func() (*brokerRun, error) {
			if br == nil && startErr == nil {
				br, startErr = startBroker(typ)
			}
			return br, startErr
		}
		runs = append(runs,
			func() (*result, error) {
				br, err := start()
				if errors.Is(err, rabbittest.ErrUnavailable) {
					b.say("destinations: %v: the rabbitmq runs are left out", err)
					return &result{Name: typ + "-direct", Notes: []string{err.Error()}}, nil
				} else if err != nil {
					return nil, fmt.Errorf("%s broker: %w", typ, err)
				}
				return b.direct(ctx, br)
			},
			func() (*result, error) {
				if br == nil {
					return nil, nil
				}
				return b.relay(ctx, br)
			},
			func() (*result, error) {
				if br == nil {
					return nil, nil
				}
				defer br.close()
				return b.viaHookjet(ctx, br)
			})
	}
	runs = append(runs, func() (*result, error) { return b.idleBrokerEndpoints(ctx) })
	return map[string][]runFunc{"destinations": runs}
}

// startBroker starts a broker of type typ with somewhere for the messages
// to go: a second nats-server with a stream on out.>, a rabbitmq-server
// node with a topic exchange bound to a queue, a kfake cluster with topic
// bench-out.
func startBroker(typ string) (*brokerRun, error) {
	switch typ {
	case "nats":
		return startNATSBroker()
	case "rabbitmq":
		return startRabbitBroker()
	}
	return startKafkaBroker()
}

func startNATSBroker() (*brokerRun, error) {
	dir, err := os.MkdirTemp("", "hookjet-bench-dest-")
	if err != nil {
		return nil, err
	}
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true})
	if err != nil {
		return nil, err
	}
	ns.Start()
	closeAll := func() { ns.Shutdown(); ns.WaitForShutdown(); _ = os.RemoveAll(dir) }
	if !ns.ReadyForConnections(10 * time.Second) {
		closeAll()
		return nil, errors.New("second nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL(), nats.Name("bench-direct"))
	if err != nil {
		closeAll()
		return nil, err
	}
	js, err := natsjs.New(nc)
	if err == nil {
		_, err = js.CreateStream(context.Background(), natsjs.StreamConfig{Name: "OUT", Subjects: []string{"out.>"}})
	}
	if err != nil {
		nc.Close()
		closeAll()
		return nil, err
	}
	return &brokerRun{
		typ: "nats",
		publish: func(ctx context.Context, run string, n int, body []byte, hs []destination.Header) error {
			m := &nats.Msg{Subject: "out." + run, Data: body, Header: nats.Header{}}
			for _, h := range hs {
				m.Header[h.Name] = []string{h.Value}
			}
			_, err := js.PublishMsg(ctx, m, natsjs.WithMsgID(run+":"+eventID(n)))
			return err
		},
		reset: func(ctx context.Context) error {
			st, err := js.Stream(ctx, "OUT")
			if err == nil {
				err = st.Purge(ctx)
			}
			return err
		},
		count: func(ctx context.Context) (int64, error) {
			st, err := js.Stream(ctx, "OUT")
			if err != nil {
				return 0, err
			}
			return int64(st.CachedInfo().State.Msgs), nil
		},
		destination: fmt.Sprintf("{type: nats, url: %q, subject: \"out.{type}\"}", ns.ClientURL()),
		close:       func() { nc.Close(); closeAll() },
		ns:          ns,
	}, nil
}

func startRabbitBroker() (*brokerRun, error) {
	node, err := rabbittest.New()
	if err != nil {
		return nil, err
	}
	conn, err := amqp.Dial(node.URL())
	if err != nil {
		_ = node.Close()
		return nil, err
	}
	closeAll := func() { _ = conn.Close(); _ = node.Close() }
	ch, err := conn.Channel()
	if err == nil {
		err = ch.ExchangeDeclare("bench", "topic", true, false, false, false, nil)
	}
	if err == nil {
		_, err = ch.QueueDeclare("bench", true, false, false, false, nil)
	}
	if err == nil {
		err = ch.QueueBind("bench", "#", "bench", false, nil)
	}
	if err != nil {
		closeAll()
		return nil, err
	}
	// One confirming channel per endpoint as hookjet has: 10, shared
	// round-robin by the publishing goroutines.
	chans := make([]*amqp.Channel, 10)
	for i := range chans {
		if chans[i], err = conn.Channel(); err == nil {
			err = chans[i].Confirm(false)
		}
		if err != nil {
			closeAll()
			return nil, err
		}
	}
	return &brokerRun{
		typ: "rabbitmq",
		publish: func(ctx context.Context, run string, n int, body []byte, hs []destination.Header) error {
			table := make(amqp.Table, len(hs))
			for _, h := range hs {
				table[h.Name] = h.Value
			}
			dc, err := chans[n%len(chans)].PublishWithDeferredConfirmWithContext(ctx, "bench", run, true, false, amqp.Publishing{
				Headers: table, ContentType: "application/json", DeliveryMode: amqp.Persistent, MessageId: eventID(n), Body: body,
			})
			if err != nil {
				return err
			}
			if ok, err := dc.WaitContext(ctx); err != nil {
				return err
			} else if !ok {
				return errors.New("nacked")
			}
			return nil
		},
		// reset and count use a channel of their own, not in confirm mode.
		reset: func(context.Context) error { _, err := ch.QueuePurge("bench", false); return err },
		count: func(context.Context) (int64, error) {
			q, err := ch.QueueDeclarePassive("bench", true, false, false, false, nil)
			return int64(q.Messages), err
		},
		destination: fmt.Sprintf("{type: rabbitmq, url: %q, exchange: bench, routing_key: \"{type}\"}", node.URL()),
		close:       closeAll,
	}, nil
}

func startKafkaBroker() (*brokerRun, error) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "bench-out"))
	if err != nil {
		return nil, err
	}
	// The options kafkadest gives its client.
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.ProducerLinger(0))
	if err != nil {
		kc.Close()
		return nil, err
	}
	return &brokerRun{
		typ: "kafka",
		publish: func(ctx context.Context, _ string, n int, body []byte, hs []destination.Header) error {
			rec := &kgo.Record{Topic: "bench-out", Key: []byte(eventID(n)), Value: body, Headers: make([]kgo.RecordHeader, len(hs))}
			for i, h := range hs {
				rec.Headers[i] = kgo.RecordHeader{Key: h.Name, Value: []byte(h.Value)}
			}
			return cl.ProduceSync(ctx, rec).FirstErr()
		},
		destination: fmt.Sprintf("{type: kafka, brokers: [%q], topic: bench-out}", kc.ListenAddrs()[0]),
		reset:       func(context.Context) error { return nil }, // the runs are counted by their own acks and hookjet's metrics
		close:       func() { cl.Close(); kc.Close() },
	}, nil
}

// direct publishes the events with concurrency goroutines (hookjet's
// worker.concurrency, which bounds its attempts in flight), each signing
// the headers hookjet would send and waiting for the broker's answer.
func (b *bench) direct(ctx context.Context, br *brokerRun) (*result, error) {
	events := b.p.destEvents()
	conc := min(b.p.concurrency, 10*b.p.maxInFlight)
	r := &result{Name: br.typ + "-direct", Events: events, Complete: true,
		Description: fmt.Sprintf("%s: the client library publishing %d signed events directly, %d at a time, each waiting for the broker's ack", br.typ, events, conc)}
	if err := br.reset(ctx); err != nil {
		return nil, fmt.Errorf("%s: empty the target: %w", r.Name, err)
	}
	signer := signature.NewSigner(b.key)
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	var next, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	runCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	for range conc {
		wg.Go(func() {
			for n := int(next.Add(1) - 1); n < events && runCtx.Err() == nil; n = int(next.Add(1) - 1) {
				body := appendPayload(make([]byte, 0, payloadSize), n, time.Now(), n%10)
				req := destination.Request{EventID: eventID(n), EventType: eventType(n % 10), Payload: body}
				if err := br.publish(runCtx, "direct", n, body, destination.MessageHeaders(signer, &req, time.Now())); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		})
	}
	wg.Wait()
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	r.setOther(m0, cpu, elapsed)
	r.Delivered = int64(events) - failed.Load()
	r.Errors = failed.Load()
	if e, ok := firstErr.Load().(string); ok {
		r.Notes = append(r.Notes, "first error: "+e)
	}
	r.Complete = runCtx.Err() == nil && failed.Load() == 0
	r.setRate(elapsed, cpu)
	r.PeakRSSMB = peakMB()
	r.GoroutinesAfter = settledGoroutines()
	b.say("%s: %d acknowledged in %.2fs = %.0f/s", r.Name, r.Delivered, r.Seconds, r.PerSecond)
	return r, ctx.Err()
}

// relay is the store-and-forward floor under hookjet's run on br: an
// embedded nats-server with nats.sync destSync and the floor's event
// stream and consumer (floor.go), the harness's publisher storing the
// events, and as many workers as the direct run has goroutines, each
// publishing an event, signed, to the broker and acking it after the
// broker's answer. No matching, ledger, delivery log, breaker or retry.
func (b *bench) relay(ctx context.Context, br *brokerRun) (*result, error) {
	events := b.p.destEvents()
	conc := min(b.p.concurrency, 10*b.p.maxInFlight)
	r := &result{Name: br.typ + "-relay", Events: events, Endpoints: 10,
		Description: fmt.Sprintf("%s: a JetStream-only relay (nats.sync %s) storing %d events, publishing each to the broker, %d at a time, and acking it after the broker's answer",
			br.typ, destSync, events, conc)}
	if err := br.reset(ctx); err != nil {
		return nil, fmt.Errorf("%s: empty the target: %w", r.Name, err)
	}
	signer := signature.NewSigner(b.key)
	runCtx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	work := make(chan natsjs.Msg, 1000)
	handle := func(_ *instance, m natsjs.Msg) {
		select {
		case work <- m:
		case <-runCtx.Done():
		}
	}
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	h, err := startFloorWith(runCtx, handle, false, b.logOut, destSync)
	if err != nil {
		return nil, err
	}
	var relayed, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	stop := sync.OnceFunc(func() { cancel(); wg.Wait(); h.stop() })
	defer stop()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	for range conc {
		wg.Go(func() {
			for {
				var m natsjs.Msg
				select {
				case m = <-work:
				case <-runCtx.Done():
					return
				}
				n, _, ok := parsePayload(m.Data())
				if !ok {
					failed.Add(1)
					_ = m.Term()
					continue
				}
				req := destination.Request{EventID: eventID(n), EventType: eventType(n % 10), Payload: m.Data()}
				if err := br.publish(runCtx, "relay", n, m.Data(), destination.MessageHeaders(signer, &req, time.Now())); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					_ = m.Nak()
					continue
				}
				_ = m.Ack()
				relayed.Add(1)
			}
		})
	}
	pubDone := newPublisher(h.js, 10).publishAll(runCtx, events, 0, t0)
	for relayed.Load() < int64(events) && runCtx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	r.setOther(m0, cpu, elapsed)
	stop()
	if err := <-pubDone; err != nil && relayed.Load() < int64(events) {
		r.Notes = append(r.Notes, err.Error())
	}
	r.Delivered, r.Errors = relayed.Load(), failed.Load()
	if e, ok := firstErr.Load().(string); ok {
		r.Notes = append(r.Notes, "first error: "+e)
	}
	r.Complete = r.Delivered >= int64(events)
	r.setRate(elapsed, cpu)
	r.PeakRSSMB = peakMB()
	r.GoroutinesAfter = settledGoroutines()
	b.say("%s: %d relayed in %.2fs = %.0f/s", r.Name, r.Delivered, r.Seconds, r.PerSecond)
	return r, ctx.Err()
}

// viaHookjet starts hookjet with 10 endpoints of br's type, publishes the
// events to them round-robin and waits until the broker holds them all
// (where br counts; else until hookjet counted as many successful
// attempts).
func (b *bench) viaHookjet(ctx context.Context, br *brokerRun) (*result, error) {
	events := b.p.destEvents()
	r := &result{Name: br.typ, Events: events, Endpoints: 10,
		Description: fmt.Sprintf("%s: hookjet (nats.sync %s) delivering %d events to 10 %s endpoints on the same broker, max_in_flight %d, worker.concurrency %d",
			br.typ, destSync, events, br.typ, b.p.maxInFlight, b.p.concurrency)}
	if err := br.reset(ctx); err != nil {
		return nil, fmt.Errorf("%s: empty the target: %w", r.Name, err)
	}
	spec := hookjetSpec{maxInFlight: b.p.maxInFlight, concurrency: b.p.concurrency, sync: destSync, logOff: b.destLogOff}
	for i := range 10 {
		spec.endpoints = append(spec.endpoints, endpointSpec{event: eventType(i), extra: "    destination: " + br.destination + "\n"})
	}
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	b.say("%s: starting hookjet with 10 %s endpoints", br.typ, br.typ)
	h, err := startHookjet(ctx, spec, b.logOut)
	if err != nil {
		return nil, err
	}
	defer h.stop()
	r.StartupSeconds = round(h.startup.Seconds(), 3)
	pub := newPublisher(h.js, 10)
	pubCtx, stopPub := context.WithCancel(ctx)
	defer stopPub()
	stopProfile, err := b.startProfile(br.typ) // -profile nats|rabbitmq|kafka
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	pubDone := pub.publishAll(pubCtx, events, 0, t0)
	deadline := t0.Add(45 * time.Second)
	var delivered float64
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if br.count != nil {
			if n, err := br.count(ctx); err == nil {
				delivered = float64(n)
			}
		} else if d := processDeliveries(ctx, h); len(d) == 1 && d[0] >= 0 {
			delivered = d[0]
		}
		if delivered >= float64(events) {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	stopProfile()
	r.setOther(m0, cpu, elapsed)
	stopPub()
	if err := <-pubDone; err != nil && delivered < float64(events) {
		r.Notes = append(r.Notes, err.Error())
	}
	r.Delivered = int64(delivered)
	r.Complete = r.Delivered >= int64(events)
	r.setRate(elapsed, cpu)
	r.PeakRSSMB = peakMB()
	r.runtimeStats()
	r.Parked = parked(deferrals(ctx, "http://"+h.srv.AdminAddr(), func(int) bool { return true }))
	r.collectLogs(h)
	if !r.Complete {
		r.Notes = append(r.Notes, fmt.Sprintf("%d of %d delivered within 45 s", r.Delivered, events))
	}
	b.say("%s: %d delivered in %.2fs = %.0f/s", r.Name, r.Delivered, r.Seconds, r.PerSecond)
	return r, ctx.Err()
}

// idleBrokerEndpoints starts hookjet with 10,000 NATS endpoints on one
// second server (each its own event type), measures memory and the
// connections the second server sees while idle, then sends one event to
// each of 100 of them and counts the connections again: one, shared.
func (b *bench) idleBrokerEndpoints(ctx context.Context) (*result, error) {
	br, err := startNATSBroker()
	if err != nil {
		return nil, err
	}
	defer br.close()
	ns := br.ns
	r := &result{Name: "dest-idle10000", Endpoints: destIdleEndpoints, Complete: true,
		Description: fmt.Sprintf("%d idle NATS endpoints on one second nats-server; then one event to each of 100 of them", destIdleEndpoints)}
	spec := hookjetSpec{maxInFlight: b.p.maxInFlight1000, concurrency: b.p.concurrency}
	for i := range destIdleEndpoints {
		spec.endpoints = append(spec.endpoints, endpointSpec{event: eventType(i), extra: "    destination: " + br.destination + "\n"})
	}
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	before := ns.NumClients() // the harness's own connection
	h, err := startHookjet(ctx, spec, b.logOut)
	if err != nil {
		return nil, err
	}
	defer h.stop()
	r.StartupSeconds = round(h.startup.Seconds(), 3)
	// The first start stores the file's endpoints for other processes in
	// the background (dispatch/sources.ShareConfigEndpoints): idle begins
	// once they are stored and the store's garbage was handed back.
	if err := waitConfigShared(ctx, h.js, destIdleEndpoints, 60*time.Second); err != nil {
		r.Notes = append(r.Notes, err.Error())
	}
	// The store's garbage handed back (scenarios.go).
	time.Sleep(bulkSettle)
	stopProfile, err := b.startProfile(r.Name) // -profile dest-idle10000: the idle window
	if err != nil {
		return nil, err
	}
	r.IdleCPUPercent = idleCPU(ctx, b.p.idle)
	stopProfile()
	r.IdleRSSMB = round(float64(memStatus()["VmRSS"])/1e6, 1)
	r.runtimeStats()
	idleConns := ns.NumClients() - before
	pub := newPublisher(h.js, 100)
	for n := range 100 {
		if err := pub.publish(n); err != nil {
			return nil, err
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	var delivered float64
	for time.Now().Before(deadline) && delivered < 100 && ctx.Err() == nil {
		if d := processDeliveries(ctx, h); len(d) == 1 {
			delivered = d[0]
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.Delivered = int64(delivered)
	r.Complete = delivered >= 100
	busyConns := ns.NumClients() - before
	r.PeakRSSMB = peakMB()
	r.Notes = append(r.Notes, fmt.Sprintf("connections at the broker: %d while idle, %d after delivering to 100 of the endpoints", idleConns, busyConns))
	r.DestConnsIdle, r.DestConnsBusy = idleConns, busyConns
	r.collectLogs(h)
	b.say("%s: idle RSS %.0f MB, connections %d idle, %d after 100 endpoints delivered", r.Name, r.IdleRSSMB, idleConns, busyConns)
	return r, ctx.Err()
}

// destinationTargets compare each broker type's hookjet rate with its
// direct client's, put it beside hookjet's webhook rate in the same run,
// and report the idle run.
func destinationTargets(get func(string) *result) []target {
	web := get("dest-webhook")
	beside := func(r *result) string {
		if r == nil || web == nil || web.PerSecond <= 0 || r.PerSecond <= 0 {
			return ""
		}
		return fmt.Sprintf("; beside hookjet's webhook endpoints in this run (dest-webhook %.0f/s): %.0f%%", web.PerSecond, 100*r.PerSecond/web.PerSecond)
	}
	nats := ratioCheck("destinations: NATS (JetStream acks) via hookjet vs the client publishing directly", ">= 70%", 70,
		get("nats"), get("nats-direct"), "destinations", func(r *result) float64 { return r.PerSecond })
	nats.detail += beside(get("nats"))
	rabbit := ratioCheck("destinations: RabbitMQ (publisher confirms) via hookjet vs the client publishing directly", ">= 70%", 70,
		get("rabbitmq"), get("rabbitmq-direct"), "destinations (and rabbitmq-server)", func(r *result) float64 { return r.PerSecond })
	rabbit.detail += beside(get("rabbitmq"))
	ts := []target{nats.target(), rabbit.target()}
	for _, typ := range []string{"nats", "rabbitmq", "kafka"} {
		t := target{Name: "destinations: " + typ + " via hookjet vs a JetStream-only relay to the same broker", Goal: "reported (the store-and-forward floor)", Unit: "%", Status: "N/A", Detail: "needs destinations"}
		if r, relay, direct := get(typ), get(typ+"-relay"), get(typ+"-direct"); r != nil && relay != nil && relay.PerSecond > 0 && r.Complete && relay.Complete {
			t.Value, t.Status = round(100*r.PerSecond/relay.PerSecond, 1), "INFO"
			t.Detail = fmt.Sprintf("%s %.0f/s vs %s-relay %.0f/s", typ, r.PerSecond, typ, relay.PerSecond)
			if direct != nil && direct.PerSecond > 0 {
				t.Detail += fmt.Sprintf("; the relay itself is %.0f%% of the client publishing directly", 100*relay.PerSecond/direct.PerSecond)
			}
		}
		ts = append(ts, t)
	}
	k := target{Name: "destinations: Kafka (kfake) via hookjet vs the client producing directly", Goal: "reported, not judged (kfake is not a broker)", Unit: "%", Status: "N/A", Detail: "needs destinations"}
	if r, base := get("kafka"), get("kafka-direct"); r != nil && base != nil && base.PerSecond > 0 {
		k.Value, k.Status = round(100*r.PerSecond/base.PerSecond, 1), "INFO"
		k.Detail = fmt.Sprintf("kafka %.0f/s vs kafka-direct %.0f/s", r.PerSecond, base.PerSecond) + beside(r)
	}
	ts = append(ts, k)
	idle := target{Name: "destinations: 10,000 idle NATS endpoints on one server: connections", Goal: "<= 1 (shared per address and credentials)", Unit: "connections", Status: "N/A", Detail: "needs destinations"}
	if r := get("dest-idle10000"); r != nil {
		idle.Value = float64(r.DestConnsBusy)
		idle.Status = map[bool]string{true: "PASS", false: "MISS"}[r.DestConnsIdle == 0 && r.DestConnsBusy <= 1 && r.Complete]
		idle.Detail = fmt.Sprintf("%d while idle, %d after 100 endpoints delivered; idle RSS %.0f MB (whole process), Go heap %.0f MB, %d goroutines, idle CPU %.2f%% of one core",
			r.DestConnsIdle, r.DestConnsBusy, r.IdleRSSMB, r.GoHeapMB, r.Goroutines, r.IdleCPUPercent)
	}
	return append(ts, idle)
}

// waitConfigShared waits (at most bound) until the bucket of shared config
// endpoints holds n of them.
func waitConfigShared(ctx context.Context, js natsjs.JetStream, n int, bound time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var stored uint64
	for ctx.Err() == nil {
		if kv, err := js.KeyValue(ctx, hjs.ConfigEndpointBucket); err == nil {
			if st, err := kv.Status(ctx); err == nil {
				if stored = st.Values(); stored >= uint64(n) {
					return nil
				}
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("%d of %d config endpoints stored for other processes within %s", stored, n, bound)
}

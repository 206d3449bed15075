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
	"github.com/hookjet/hookjet/signature"
)

// The destinations scenario (issue 50): for each broker type, the same
// client library publishing directly to the same broker (the baseline),
// then hookjet delivering as many events to 10 endpoints of that type on
// that broker, in the same run; then 10,000 idle NATS endpoints for memory
// and connections. Broker runs count an event delivered once the broker
// acknowledged it: the direct client's own acks, hookjet's
// hookjet_attempts_total{class="success"}.

// destIdleEndpoints is the endpoint count of the idle run.
const destIdleEndpoints = 10000

// destEvents are the events of each broker run.
func (p params) destEvents() int {
	if p.quick {
		return 3000
	}
	return 20000
}

// brokerRun says how to reach one broker: publish sends event n directly
// (the baseline) and waits for the broker's answer; destination is an
// endpoint's destination YAML.
type brokerRun struct {
	typ         string
	publish     func(ctx context.Context, n int, body []byte, hs []destination.Header) error
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
			behave:      allHealthy(10), events: events, maxInFlight: b.p.maxInFlight, bound: 45 * time.Second})
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
		publish: func(ctx context.Context, n int, body []byte, hs []destination.Header) error {
			m := &nats.Msg{Subject: "out.direct", Data: body, Header: nats.Header{}}
			for _, h := range hs {
				m.Header[h.Name] = []string{h.Value}
			}
			_, err := js.PublishMsg(ctx, m, natsjs.WithMsgID(fmt.Sprintf("direct:%s", eventID(n))))
			return err
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
		publish: func(ctx context.Context, n int, body []byte, hs []destination.Header) error {
			table := make(amqp.Table, len(hs))
			for _, h := range hs {
				table[h.Name] = h.Value
			}
			dc, err := chans[n%len(chans)].PublishWithDeferredConfirmWithContext(ctx, "bench", "direct", true, false, amqp.Publishing{
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
		publish: func(ctx context.Context, n int, body []byte, hs []destination.Header) error {
			rec := &kgo.Record{Topic: "bench-out", Key: []byte(eventID(n)), Value: body, Headers: make([]kgo.RecordHeader, len(hs))}
			for i, h := range hs {
				rec.Headers[i] = kgo.RecordHeader{Key: h.Name, Value: []byte(h.Value)}
			}
			return cl.ProduceSync(ctx, rec).FirstErr()
		},
		destination: fmt.Sprintf("{type: kafka, brokers: [%q], topic: bench-out}", kc.ListenAddrs()[0]),
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
				if err := br.publish(runCtx, n, body, destination.MessageHeaders(signer, &req, time.Now())); err != nil {
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

// viaHookjet starts hookjet with 10 endpoints of br's type, publishes the
// events to them round-robin and waits until hookjet counted as many
// successful attempts.
func (b *bench) viaHookjet(ctx context.Context, br *brokerRun) (*result, error) {
	events := b.p.destEvents()
	r := &result{Name: br.typ, Events: events, Endpoints: 10,
		Description: fmt.Sprintf("%s: hookjet delivering %d events to 10 %s endpoints on the same broker, max_in_flight %d, worker.concurrency %d",
			br.typ, events, br.typ, b.p.maxInFlight, b.p.concurrency)}
	spec := hookjetSpec{maxInFlight: b.p.maxInFlight, concurrency: b.p.concurrency}
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
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	pubDone := pub.publishAll(pubCtx, events, 0, t0)
	deadline := t0.Add(45 * time.Second)
	var delivered float64
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if d := processDeliveries(ctx, h); len(d) == 1 && d[0] >= 0 {
			delivered = d[0]
		}
		if delivered >= float64(events) {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
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
	r.IdleCPUPercent = idleCPU(ctx, b.p.idle)
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

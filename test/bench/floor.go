package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
)

// The floor is what JetStream alone costs under hookjet: the same embedded
// server (file storage), the same event stream settings as HOOKJET_EVENTS
// (limits retention, hookjet's default duplicate window, max age and max
// bytes), one durable pull consumer with hookjet's fan-out settings, and an
// ack per event; no HTTP, no signing, no ledger. Its connections are
// in-process, as hookjet's own connection to its embedded server is.
const (
	floorStream   = "FLOOR_EVENTS"
	floorConsumer = "floor"
)

// startFloor starts an embedded nats-server with the event stream and one
// consumer that records each event in x and acks it. With tcp it also listens
// on a loopback port for an outside publisher; the in-process publisher is
// connected either way.
//
// sync is the server's policy as nats.sync spells it: "" or "always"
// (SyncAlways, hookjet's default) or a lazy interval such as "2m".
func startFloor(ctx context.Context, x *tally, tcp bool, logOut io.Writer, sync string) (*instance, error) {
	return startFloorWith(ctx, x.floorHandler, tcp, logOut, sync)
}

// startFloorWith is startFloor with the consumer's handler: handle gets
// each event and acks it (the instance's logs note what failed).
func startFloorWith(ctx context.Context, handle func(*instance, natsjs.Msg), tcp bool, logOut io.Writer, sync string) (*instance, error) {
	dir, err := os.MkdirTemp("", "hookjet-floor-")
	if err != nil {
		return nil, err
	}
	h := &instance{dir: dir, logs: newLogCounter(logOut, slog.LevelWarn)}
	ok := false
	defer func() {
		if !ok {
			h.stop()
		}
	}()
	start := time.Now()
	opts := &server.Options{
		ServerName: "floor", Host: "127.0.0.1", Port: server.RANDOM_PORT, DontListen: !tcp,
		JetStream: true, StoreDir: dir, NoSigs: true, NoLog: true, MaxPayload: 8 << 20,
	}
	if iv, lazy := (config.NATS{Sync: sync}).SyncInterval(); lazy {
		opts.SyncInterval = iv
	} else {
		opts.SyncAlways = true
	}
	if h.ns, err = server.NewServer(opts); err != nil {
		return nil, fmt.Errorf("floor nats-server: %w", err)
	}
	h.ns.Start()
	if !h.ns.ReadyForConnections(10 * time.Second) {
		return nil, fmt.Errorf("floor nats-server not ready")
	}
	if err := h.connectPublisher(h.ns.ClientURL(), nats.InProcessServer(h.ns)); err != nil {
		return nil, err
	}
	dial := func(name string) (*nats.Conn, error) {
		return nats.Connect(h.ns.ClientURL(), nats.InProcessServer(h.ns), nats.Name(name))
	}
	if err := h.consumeFloor(ctx, handle, 1, dial); err != nil {
		return nil, err
	}
	h.startup = time.Since(start)
	ok = true
	return h, nil
}

// consumeFloor creates the floor's stream (with replicas) and consumer and
// starts consuming on a connection of its own, opened by dial.
func (h *instance) consumeFloor(ctx context.Context, handle func(*instance, natsjs.Msg), replicas int, dial func(name string) (*nats.Conn, error)) error {
	st := config.Default().Streams
	js := h.js
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{
		Name: floorStream, Subjects: []string{"hookjet.events.>"}, Retention: natsjs.LimitsPolicy,
		Storage: natsjs.FileStorage, Duplicates: st.DuplicateWindow, MaxAge: st.MaxAge, MaxBytes: st.MaxBytes,
		Discard: natsjs.DiscardNew, Replicas: replicas,
	}); err != nil {
		return fmt.Errorf("floor stream: %w", err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, floorStream, natsjs.ConsumerConfig{
		Durable: floorConsumer, DeliverPolicy: natsjs.DeliverAllPolicy, AckPolicy: natsjs.AckExplicitPolicy,
		AckWait: 30 * time.Second, MaxDeliver: 10, FilterSubject: "hookjet.events.>",
		MaxAckPending: 20000, MaxWaiting: 512,
	}); err != nil {
		return fmt.Errorf("floor consumer: %w", err)
	}
	nc, err := dial("floor-consumer")
	if err != nil {
		return fmt.Errorf("floor consumer connection: %w", err)
	}
	cjs, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return err
	}
	cons, err := cjs.Consumer(ctx, floorStream, floorConsumer)
	if err != nil {
		nc.Close()
		return err
	}
	cc, err := cons.Consume(func(m natsjs.Msg) { handle(h, m) }, natsjs.PullMaxMessages(1000))
	if err != nil {
		nc.Close()
		return fmt.Errorf("floor consume: %w", err)
	}
	h.stopSub = func() {
		cc.Stop()
		<-cc.Closed()
		nc.Close()
	}
	return nil
}

// floorHandler records each event in x and acks it.
func (x *tally) floorHandler(h *instance, m natsjs.Msg) {
	body := m.Data()
	if n, _, ok := parsePayload(body); ok {
		x.record(n%len(x.behave), body, nil, nil)
	} else {
		x.bad.Add(1)
	}
	if err := m.Ack(); err != nil {
		h.logs.note("floor ack: " + err.Error())
	}
}

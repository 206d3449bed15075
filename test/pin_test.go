package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	hjs "github.com/hookjet/hookjet/jetstream"
)

// These tests pin the JetStream behaviour hookjet's design relies on, on the
// nats-server version in go.mod, with hookjet's own stream setup.

func pinSetup(t *testing.T) natsjs.JetStream {
	t.Helper()
	cfg := config.Default()
	cfg.NATS.Listen = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	ns, err := hjs.StartEmbedded(cfg.NATS, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if err := hjs.EnsureStreams(t.Context(), js, &cfg); err != nil {
		t.Fatal(err)
	}
	return js
}

func pinConsumer(t *testing.T, js natsjs.JetStream, id string, events ...string) natsjs.Consumer {
	t.Helper()
	ep := config.Endpoint{ID: id, Events: events}
	ep.Timeout = time.Second
	ep.Retry.MaxAttempts = 5
	c, err := hjs.EnsureConsumer(t.Context(), js, ep)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestPinInterestRetention(t *testing.T) {
	js := pinSetup(t)
	a := pinConsumer(t, js, "a", "order.*")
	pinConsumer(t, js, "b", "order.created", "lead.>")
	for _, subj := range []string{"order.created", "lead.x.y", "user.deleted"} {
		if _, err := js.Publish(t.Context(), hjs.EventsPrefix+subj, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	st, err := js.Stream(t.Context(), hjs.EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// user.deleted matches no consumer: interest retention does not store it.
	if info.State.Msgs != 2 {
		t.Fatalf("stream holds %d messages, want 2", info.State.Msgs)
	}
	// order.created stays until both consumers acked it.
	msgs, err := a.Fetch(1, natsjs.FetchMaxWait(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range msgs.Messages() {
		if err := m.DoubleAck(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if info, _ = st.Info(t.Context()); info.State.Msgs != 2 {
		t.Fatalf("after one of two acks the stream holds %d, want 2", info.State.Msgs)
	}
}

func TestPinNakWithDelayAndPause(t *testing.T) {
	js := pinSetup(t)
	c := pinConsumer(t, js, "slow", ">")
	if _, err := js.Publish(t.Context(), hjs.EventsPrefix+"x", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	next := func(wait time.Duration) (natsjs.Msg, time.Time) {
		t.Helper()
		batch, err := c.Fetch(1, natsjs.FetchMaxWait(wait))
		if err != nil {
			t.Fatal(err)
		}
		var got natsjs.Msg
		at := time.Now()
		for m := range batch.Messages() {
			got, at = m, time.Now()
		}
		return got, at
	}
	m, _ := next(time.Second)
	if m == nil {
		t.Fatal("no message")
	}
	// NakWithDelay: the consumer has no BackOff, so the delay is what we ask.
	naked := time.Now()
	if err := m.NakWithDelay(700 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	m, at := next(3 * time.Second)
	if m == nil || at.Sub(naked) < 650*time.Millisecond {
		t.Fatalf("redelivered after %s, asked 700ms", at.Sub(naked))
	}
	if meta, _ := m.Metadata(); meta.NumDelivered != 2 {
		t.Fatalf("NumDelivered = %d after one nak, want 2", meta.NumDelivered)
	}
	// PauseConsumer: nothing is delivered until the pause ends.
	if err := m.Nak(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	paused := time.Now()
	if _, err := js.PauseConsumer(ctx, hjs.EventsStream, hjs.ConsumerName("slow"), paused.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	m, at = next(3 * time.Second)
	if m == nil || at.Sub(paused) < 900*time.Millisecond {
		t.Fatalf("paused consumer delivered after %s, paused for 1s", at.Sub(paused))
	}
}

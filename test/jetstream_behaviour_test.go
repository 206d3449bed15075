package test

import (
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
	if err := hjs.EnsureStreams(t.Context(), js, &cfg, nil); err != nil {
		t.Fatal(err)
	}
	return js
}

func pinDrain(t *testing.T, js natsjs.JetStream, id string) natsjs.Consumer {
	t.Helper()
	ep := config.Endpoint{ID: id}
	ep.Timeout = time.Second
	ep.MaxInFlight = 4
	c, err := hjs.EnsureDrainConsumer(t.Context(), js, ep)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fetchOne(t *testing.T, c natsjs.Consumer, wait time.Duration) (natsjs.Msg, time.Time) {
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

// A retry is a message schedule on hookjet.sched.<endpoint>.<event>: the
// server turns it into a task on hookjet.tasks.<endpoint> at its time, with
// hookjet's headers, and purges the schedule. Its Nats-Msg-Id dedupes a
// second publish. Until it fires no consumer holds anything for it.
func TestPinScheduledRetry(t *testing.T) {
	js := pinSetup(t)
	c := pinDrain(t, js, "ep1")
	m := nats.NewMsg(hjs.SchedPrefix + "ep1.42")
	m.Data = []byte(`{"n":1}`)
	at := time.Now().Add(1500 * time.Millisecond)
	m.Header.Set("Nats-Schedule", "@at "+at.UTC().Format(time.RFC3339Nano))
	m.Header.Set("Nats-Schedule-Target", hjs.TasksPrefix+"ep1")
	m.Header.Set("Nats-Msg-Id", "task-ep1-42-1")
	m.Header.Set("Hookjet-Attempts", "1")
	for i, wantDup := range []bool{false, true} {
		ack, err := js.PublishMsg(t.Context(), m)
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != wantDup {
			t.Fatalf("publish %d: duplicate=%v", i, ack.Duplicate)
		}
	}
	got, when := fetchOne(t, c, 5*time.Second)
	if got == nil {
		t.Fatal("the schedule never fired")
	}
	if when.Before(at.Add(-100 * time.Millisecond)) {
		t.Fatalf("fired %s early", at.Sub(when))
	}
	if got.Subject() != hjs.TasksPrefix+"ep1" || got.Headers().Get("Hookjet-Attempts") != "1" || string(got.Data()) != `{"n":1}` {
		t.Fatalf("task %s %v %q", got.Subject(), got.Headers(), got.Data())
	}
	if err := got.DoubleAck(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, _ := js.Stream(t.Context(), hjs.TasksStream)
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Fatalf("%d messages left: the schedule was not purged or the task not removed", info.State.Msgs)
	}
}

// Tasks wait on their endpoint's subject with no consumer; a drain consumer
// takes them, a deleted one leaves the unacked ones in place for the next,
// and a second consumer on the same subject is refused (work queue).
func TestPinParkedTasks(t *testing.T) {
	js := pinSetup(t)
	for i := range 3 {
		if _, err := js.Publish(t.Context(), hjs.TasksPrefix+"dead", []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	c := pinDrain(t, js, "dead")
	m, _ := fetchOne(t, c, time.Second)
	if m == nil || string(m.Data()) != "0" {
		t.Fatal("no first task")
	}
	if _, err := js.CreateOrUpdateConsumer(t.Context(), hjs.TasksStream, natsjs.ConsumerConfig{
		Durable: "other", FilterSubject: hjs.TasksPrefix + "dead", AckPolicy: natsjs.AckExplicitPolicy,
	}); err == nil {
		t.Fatal("a second consumer on one endpoint's tasks was accepted")
	}
	if err := js.DeleteConsumer(t.Context(), hjs.TasksStream, hjs.DrainConsumerName("dead")); err != nil {
		t.Fatal(err)
	}
	c = pinDrain(t, js, "dead")
	m, _ = fetchOne(t, c, time.Second)
	if m == nil || string(m.Data()) != "0" {
		t.Fatal("the unacked task did not come back to the next drain")
	}
	// NakWithDelay on a drain: the consumer has no BackOff, so the delay is
	// what we ask.
	naked := time.Now()
	if err := m.NakWithDelay(700 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for {
		m, at := fetchOne(t, c, 3*time.Second)
		if m == nil {
			t.Fatal("the naked task never came back")
		}
		if string(m.Data()) != "0" {
			if err := m.Ack(); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if at.Sub(naked) < 650*time.Millisecond {
			t.Fatalf("redelivered after %s, asked 700ms", at.Sub(naked))
		}
		return
	}
}

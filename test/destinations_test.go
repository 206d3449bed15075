package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/internal/rabbittest"
	"github.com/hookjet/hookjet/webhook"
)

// engineOpensDestinations says whether the engine (dispatch.openDestination)
// opens an endpoint with the opener of its destination's type and passes
// its options; until it does, every endpoint is a webhook. The change that
// makes it so sets this true.
const engineOpensDestinations = true

// TestDestinationsBeyondHTTP publishes events to hookjet and receives them
// on a second NATS server's stream, a Kafka topic (kfake) and a RabbitMQ
// queue (a throw-away rabbitmq-server node), each once, with a signature a
// consumer verifies with package webhook.
func TestDestinationsBeyondHTTP(t *testing.T) {
	if !engineOpensDestinations {
		t.Skip("the engine opens every endpoint as a webhook until dispatch.openDestination passes ep.Destination (issue 50): set engineOpensDestinations with that change")
	}
	// the second NATS server, with a stream taking orders.>
	ns, err := natsserver.NewServer(&natsserver.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("second nats-server not ready")
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	ctx := context.Background()
	stream, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}})
	if err != nil {
		t.Fatal(err)
	}
	// Kafka
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders.acme"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	// RabbitMQ
	node := rabbittest.Start(t)
	conn, err := amqp.Dial(node.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	ch, err := conn.Channel()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.ExchangeDeclare("hooks", "topic", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ch.QueueDeclare("orders", true, false, false, false, nil); err != nil {
		t.Fatal(err)
	}
	if err := ch.QueueBind("orders", "orders.#", "hooks", false, nil); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "to-nats", Events: []string{"order.>"}, Extra: fmt.Sprintf("    destination: {type: nats, url: %q, subject: \"orders.{tenant}.{type}\"}\n", ns.ClientURL())},
		endpointYAML{ID: "to-kafka", Events: []string{"order.>"}, Extra: fmt.Sprintf("    destination: {type: kafka, brokers: [%q], topic: \"orders.{tenant}\"}\n", kc.ListenAddrs()[0])},
		endpointYAML{ID: "to-rabbitmq", Events: []string{"order.>"}, Extra: fmt.Sprintf("    destination: {type: rabbitmq, url: %q, exchange: hooks, routing_key: \"orders.{type}\"}\n", node.URL())},
	)
	h := startHookjet(t, cfg, cli.Options{})
	body := []byte(`{"order":42,"tenant":"acme"}`)
	h.publish("order.created", "evt_1", body)

	v, err := webhook.NewVerifier([]string{secretA})
	if err != nil {
		t.Fatal(err)
	}
	check := func(where string, h map[string][]string, got []byte) {
		t.Helper()
		if string(got) != string(body) {
			t.Errorf("%s: payload %s", where, got)
		}
		if err := v.VerifyMessage(h, got); err != nil {
			t.Errorf("%s: signature: %v", where, err)
		}
		for name, want := range map[string]string{"webhook-id": "evt_1", "Hookjet-Event-Type": "order.created", "Hookjet-Tenant": "acme"} {
			if vs := h[name]; len(vs) != 1 || vs[0] != want {
				t.Errorf("%s: header %s = %q, want %q", where, name, vs, want)
			}
		}
	}

	// NATS: the stream stored it once
	var m *natsjs.RawStreamMsg
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		m, err = stream.GetMsg(ctx, 1)
		return err
	})
	if m.Subject != "orders.acme.order.created" || m.Header.Get("Nats-Msg-Id") != "to-nats:evt_1" {
		t.Errorf("nats: subject %q, Nats-Msg-Id %q", m.Subject, m.Header.Get("Nats-Msg-Id"))
	}
	check("nats", m.Header, m.Data)

	// Kafka: one record keyed by the event id
	cl, err := kgo.NewClient(kgo.SeedBrokers(kc.ListenAddrs()...), kgo.ConsumeTopics("orders.acme"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var recs []*kgo.Record
	for len(recs) == 0 && pctx.Err() == nil {
		recs = append(recs, cl.PollFetches(pctx).Records()...)
	}
	if len(recs) != 1 {
		t.Fatalf("kafka: %d records", len(recs))
	}
	kh := map[string][]string{}
	for _, x := range recs[0].Headers {
		kh[x.Key] = append(kh[x.Key], string(x.Value))
	}
	if string(recs[0].Key) != "evt_1" {
		t.Errorf("kafka: key %q", recs[0].Key)
	}
	check("kafka", kh, recs[0].Value)

	// RabbitMQ: one message in the queue
	var d amqp.Delivery
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		var ok bool
		if d, ok, err = ch.Get("orders", true); err != nil || !ok {
			return fmt.Errorf("nothing in orders yet (%w)", err)
		}
		return nil
	})
	rh := map[string][]string{}
	for k, x := range d.Headers {
		s, _ := x.(string)
		rh[k] = []string{s}
	}
	if d.RoutingKey != "orders.order.created" {
		t.Errorf("rabbitmq: routing key %q", d.RoutingKey)
	}
	check("rabbitmq", rh, d.Body)

	// once each: nothing more arrives after a marker went through them all
	h.publish("order.marker", "evt_marker", []byte(`{"tenant":"acme"}`))
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		info, err := stream.Info(ctx)
		if err != nil || info.State.Msgs != 2 {
			if err != nil {
				return err
			}
			return fmt.Errorf("nats stream: %d messages, want 2", info.State.Msgs)
		}
		return nil
	})
	if _, ok, _ := ch.Get("orders", true); !ok {
		t.Error("rabbitmq: the marker did not arrive")
	}
	if _, ok, _ := ch.Get("orders", true); ok {
		t.Error("rabbitmq: a second copy")
	}
}

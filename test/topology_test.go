package test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
	hjs "github.com/hookjet/hookjet/jetstream"
)

// consumerCount counts the consumers of stream.
func consumerCount(t *testing.T, js natsjs.JetStream, stream string) int {
	t.Helper()
	st, err := js.Stream(t.Context(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.Consumers
}

// 10,000 endpoints start and deliver with two consumers on HOOKJET_EVENTS,
// the fan-out and this process's event index (an ordered consumer, one per
// process): the number of endpoints does not decide the number of
// consumers.
func TestTenThousandEndpoints(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "")
	for i := range 10000 {
		ep := cfg.Defaults
		cfg.Endpoints = append(cfg.Endpoints, config.Endpoint{
			ID: fmt.Sprintf("ep%05d", i), URL: r.URL, Events: []string{fmt.Sprintf("tenant%d.>", i)},
			Secrets: []config.Secret{config.NewSecret(secretA), config.NewSecret(secretB)}, Settings: ep,
		})
	}
	cfg.Security.MaxEndpoints = 10000
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	h := startHookjet(t, cfg, cli.Options{})
	t.Logf("10,000 endpoints started in %s", time.Since(started).Round(time.Millisecond))
	for _, i := range []int{0, 4242, 9999} {
		h.publish(fmt.Sprintf("tenant%d.order.created", i), fmt.Sprintf("evt_%d", i), []byte(`{}`))
	}
	for _, i := range []int{0, 4242, 9999} {
		r.waitFor(t, fmt.Sprintf("evt_%d", i))
	}
	if n := consumerCount(t, h.js, hjs.EventsStream); n != 2 {
		t.Fatalf("HOOKJET_EVENTS has %d consumers, want 2 (the fan-out and the event index's)", n)
	}
}

// A dead endpoint with a large backlog holds no ack slot of the shared
// fan-out consumer and does not delay a healthy endpoint that receives the
// same events: its deliveries wait as tasks on its own subject.
func TestDeadEndpointBacklogDoesNotDelayHealthy(t *testing.T) {
	dead := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	healthy := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "",
		endpointYAML{ID: "dead", URL: dead.URL, Extra: "    breaker: {failure_threshold: 3, cooldown: 1h}\n    retry: {max_attempts: 50}\n"},
		endpointYAML{ID: "healthy", URL: healthy.URL}), cli.Options{})
	const n = 1000
	for i := range n {
		h.publish("order.created", fmt.Sprintf("evt_%04d", i), []byte(`{}`))
	}
	checkFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if got := healthy.distinct(); got != n {
			return fmt.Errorf("healthy has %d of %d", got, n)
		}
		return nil
	})
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if err := fanoutSettled(t.Context(), h.js); err != nil {
			return err
		}
		return nil
	})
	var ep struct {
		Pending uint64 `json:"pending"`
		Breaker struct {
			State string `json:"state"`
		} `json:"breaker"`
	}
	h.api("GET", "/api/v1/endpoints/dead", "", nil, &ep)
	if ep.Breaker.State != "open" || ep.Pending < n-10 {
		t.Fatalf("dead endpoint: breaker %s, %d waiting; want open with about %d", ep.Breaker.State, ep.Pending, n)
	}
	if got := dead.count(); got > 20 {
		t.Fatalf("the dead endpoint was sent %d requests with its breaker open", got)
	}
}

// A deployment of the first design (interest-retention HOOKJET_EVENTS with a
// consumer per endpoint holding undelivered events) is upgraded at start:
// every waiting event is delivered once, and the old consumer is gone.
func TestUpgradeFromPerEndpointConsumers(t *testing.T) {
	ns := startNATSNode(t, "legacy", standaloneNATS(t))
	nc, err := nats.Connect(ns.url())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := natsjs.New(nc)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := js.CreateStream(ctx, natsjs.StreamConfig{Name: hjs.EventsStream, Subjects: []string{hjs.EventsPrefix + ">"},
		Retention: natsjs.InterestPolicy, Duplicates: 2 * time.Minute, Discard: natsjs.DiscardNew}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateOrUpdateConsumer(ctx, hjs.EventsStream, natsjs.ConsumerConfig{Durable: "ep-old",
		FilterSubjects: []string{hjs.EventsPrefix + "order.*"}, AckPolicy: natsjs.AckExplicitPolicy, DeliverPolicy: natsjs.DeliverNewPolicy}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		m := nats.NewMsg(hjs.EventsPrefix + "order.created")
		m.Data = []byte(`{}`)
		m.Header.Set("Nats-Msg-Id", fmt.Sprintf("evt_old_%d", i))
		if _, err := js.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "old", URL: r.URL, Events: []string{"order.*"}})
	cfg.NATS.URL = ns.url()
	h := startHookjet(t, cfg, cli.Options{})
	h.publish("order.created", "evt_new", []byte(`{}`))
	for i := range 5 {
		r.waitFor(t, fmt.Sprintf("evt_old_%d", i))
	}
	r.waitFor(t, "evt_new")
	h.settle("order.created", r)
	if dups := r.count() - r.distinct(); dups != 0 {
		t.Fatalf("%d duplicates after the upgrade", dups)
	}
	if _, err := js.Consumer(ctx, hjs.EventsStream, "ep-old"); err == nil {
		t.Fatal("the old per-endpoint consumer is still there")
	}
}

// An operator deletes the fan-out consumer: hookjet creates it again,
// starting after the ack floor it last saw rather than at the start of the
// log (which would resend every event older than the ledger's TTL), and
// keeps delivering.
func TestFanoutConsumerDeletedIsCreatedAgain(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	h := startHookjet(t, testConfig(t, t.TempDir(), "", endpointYAML{ID: "a", URL: r.URL}), cli.Options{})
	for i := range 3 {
		h.publish("order.created", fmt.Sprintf("evt_del_%d", i), []byte(`{}`))
	}
	for i := range 3 {
		r.waitFor(t, fmt.Sprintf("evt_del_%d", i))
	}
	waitSettled(t, h.js, "a", 10*time.Second)
	// The summary reads the fan-out's ack floor (as the gauges do every 5 s).
	if code := h.api("GET", "/api/v1/summary", "", nil, nil); code != http.StatusOK {
		t.Fatalf("summary: HTTP %d", code)
	}
	if err := h.js.DeleteConsumer(t.Context(), hjs.EventsStream, hjs.FanoutConsumer); err != nil {
		t.Fatal(err)
	}
	var cons natsjs.Consumer
	checkFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		c, err := h.js.Consumer(t.Context(), hjs.EventsStream, hjs.FanoutConsumer)
		if err != nil {
			return fmt.Errorf("fan-out consumer: %w", err)
		}
		cons = c
		return nil
	})
	cc := cons.CachedInfo().Config
	if cc.DeliverPolicy != natsjs.DeliverByStartSequencePolicy || cc.OptStartSeq != 4 {
		t.Fatalf("created again with deliver policy %v from %d, want from sequence 4 (after the ack floor, 3)", cc.DeliverPolicy, cc.OptStartSeq)
	}
	h.publish("order.created", "evt_del_3", []byte(`{}`))
	r.waitFor(t, "evt_del_3")
	if n := r.count(); n != 4 {
		t.Fatalf("receiver got %d requests, want 4", n)
	}
}

// Events stored while hookjet was down, for an endpoint created through the
// API, are delivered after the restart: the fan-out pulls only once the API
// endpoints are applied, or the first batch would find no endpoint and be
// acked undelivered.
func TestRestartDeliversWhatWaitedForAPIEndpoints(t *testing.T) {
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "file", URL: r.URL, Events: []string{"other.*"}})
	cfg.NATS.URL = ns.url()
	h := startHookjet(t, cfg, cli.Options{})
	h.createAPIEndpoint("api1", r.URL, "order.*")
	h.stop()

	_, js := connectJS(t, ns.url())
	ids := eventIDs("evt_down", 300)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var st pubStats
	if err := publishRetrying(ctx, js, ids, 4, 0, &st); err != nil {
		t.Fatal(err)
	}
	startHookjet(t, cfg, cli.Options{})
	waitAllDelivered(t, r, ids, 30*time.Second)
}

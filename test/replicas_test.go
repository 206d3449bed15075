package test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
)

// hookjetStreams are the streams and buckets a start with the delivery log
// on creates.
var hookjetStreams = []string{"HOOKJET_EVENTS", "HOOKJET_TASKS", "HOOKJET_DLQ", "HOOKJET_ADVISORIES", "HOOKJET_OPS", "HOOKJET_LOG",
	"HOOKJET_SEEN", "KV_HOOKJET_ENDPOINT_STATE", "KV_HOOKJET_ENDPOINTS"}

// streamConfigs reads the configuration of every stream in names.
func streamConfigs(t *testing.T, js natsjs.JetStream, names []string) map[string]natsjs.StreamConfig {
	t.Helper()
	out := map[string]natsjs.StreamConfig{}
	for _, name := range names {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		st, err := js.Stream(ctx, name)
		cancel()
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		out[name] = st.CachedInfo().Config
	}
	return out
}

func wantReplicas(t *testing.T, js natsjs.JetStream, n int) map[string]natsjs.StreamConfig {
	t.Helper()
	cfgs := streamConfigs(t, js, hookjetStreams)
	for name, c := range cfgs {
		if c.Replicas != n {
			t.Errorf("%s has %d replicas, want %d", name, c.Replicas, n)
		}
	}
	return cfgs
}

// startRefused starts hookjet with cfg, which must be refused: it returns
// the error and the log, and fails when start-up retried instead.
func startRefused(t *testing.T, cfg *config.Config) (string, error) {
	t.Helper()
	var logs bytes.Buffer
	s, err := cli.Start(t.Context(), cfg, cli.Options{Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil {
		_ = s.Shutdown()
		t.Fatalf("started with streams.replicas %d", cfg.Streams.Replicas)
	}
	if strings.Contains(logs.String(), "retrying") {
		t.Errorf("start-up retried a change NATS can never make:\n%s", logs.String())
	}
	return logs.String(), err
}

// On a 3-node cluster, streams.replicas goes from 3 to 1 and back: every
// stream and bucket follows, HOOKJET_LOG keeps the persist mode NATS cannot
// change, and events are delivered after each change.
func TestReplicasChangeAppliedOnCluster(t *testing.T) {
	nodes := startCluster(t)
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	start := func(replicas int) *hookjet {
		cfg := testConfig(t, dir, "", endpointYAML{ID: "sink", URL: r.URL})
		cfg.NATS.URL, cfg.Streams.Replicas = clusterURL(nodes), replicas
		return startHookjet(t, cfg, cli.Options{})
	}
	_, js := connectJS(t, clusterURL(nodes))
	h := start(3)
	h.publish("order.created", "evt_r3", []byte(`{"n":3}`))
	r.waitFor(t, "evt_r3")
	wantReplicas(t, js, 3)
	h.stop()

	h = start(1)
	h.publish("order.created", "evt_r1", []byte(`{"n":1}`))
	r.waitFor(t, "evt_r1")
	cfgs := wantReplicas(t, js, 1)
	if pm := cfgs["HOOKJET_LOG"].PersistMode; pm != natsjs.DefaultPersistMode {
		t.Errorf("HOOKJET_LOG persist mode %v after going to one replica, want the default it was created with", pm)
	}
	h.stop()

	h = start(3)
	h.publish("order.created", "evt_r3_again", []byte(`{"n":3}`))
	r.waitFor(t, "evt_r3_again")
	wantReplicas(t, js, 3)
}

// A HOOKJET_LOG created on one replica flushes asynchronously, which NATS
// cannot replicate: going to streams.replicas 3 is refused at once, with
// one message that names the key, the stream and the way out, and no
// stream is changed.
func TestReplicasChangeNATSCannotMakeIsRefused(t *testing.T) {
	nodes := startCluster(t)
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", endpointYAML{ID: "sink", URL: r.URL})
	cfg.NATS.URL = clusterURL(nodes)
	h := startHookjet(t, cfg, cli.Options{})
	h.stop()
	_, js := connectJS(t, clusterURL(nodes))
	if pm := streamConfigs(t, js, []string{"HOOKJET_LOG"})["HOOKJET_LOG"].PersistMode; pm != natsjs.AsyncPersistMode {
		t.Fatalf("HOOKJET_LOG on one replica has persist mode %v; the test needs async", pm)
	}
	cfg3 := testConfig(t, dir, "", endpointYAML{ID: "sink", URL: r.URL})
	cfg3.NATS.URL, cfg3.Streams.Replicas = clusterURL(nodes), 3
	_, err := startRefused(t, cfg3)
	t.Logf("refused: %v", err)
	for _, want := range []string{"streams.replicas 3", "HOOKJET_LOG", "nats stream rm HOOKJET_LOG"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	wantReplicas(t, js, 1)
}

// The embedded server is one node: streams.replicas 3 on a deployment that
// has one replica is refused at once with a message naming the key.
func TestReplicasChangeOnOneNodeIsRefused(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, nil)
	dir := t.TempDir()
	cfg := testConfig(t, dir, "", endpointYAML{ID: "sink", URL: r.URL})
	startHookjet(t, cfg, cli.Options{}).stop()
	cfg3 := testConfig(t, dir, "", endpointYAML{ID: "sink", URL: r.URL})
	cfg3.NATS.Listen, cfg3.Streams.Replicas = cfg.NATS.Listen, 3
	_, err := startRefused(t, cfg3)
	t.Logf("refused: %v", err)
	if !strings.Contains(err.Error(), "streams.replicas") || !strings.Contains(err.Error(), "not clustered") {
		t.Errorf("the refusal does not name streams.replicas and why: %v", err)
	}
}

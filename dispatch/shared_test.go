package dispatch

import (
	"log/slog"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

// Two processes with different config files share the fan-out: each
// learns the other's config endpoints through HOOKJET_CONFIG_ENDPOINTS, so
// whichever pulls an event delivers it to both files' endpoints, once.
// When one file drops its endpoint, the other process stops delivering to
// it too; its own file's endpoint stays.
func TestProcessesShareTheirConfigEndpoints(t *testing.T) {
	rc := newReceiver(t)
	node, cfg := sharedNode(t)
	p1 := sharing(t, node, cfg, []config.Endpoint{endpointTo("one", rc)})
	// The second file's defaults differ: a shared definition is resolved
	// as its own process resolved it, never against the reader's file.
	other := *cfg
	other.Defaults.MaxInFlight, other.Defaults.Retry.MaxAttempts = 3, 9
	p2 := sharing(t, node, &other, []config.Endpoint{endpointTo("two", rc)})
	eventually(t, "the first process learns the second's endpoint", 10*time.Second, func() bool {
		ep, ok := p1.d.table.Get("two")
		return ok && ep.Source == config.SourceConfig && !p1.d.table.OwnsConfig("two")
	})
	if ep, ok := p2.d.table.Get("one"); !ok || ep.URL != rc.srv.URL+"/one" {
		t.Fatalf("the second process does not know the first's endpoint: %+v %v", ep.URL, ok)
	} else if ep.Settings != fastSettings() {
		t.Fatalf("the second process resolved the first's endpoint as\n%+v, its file says\n%+v", ep.Settings, fastSettings())
	}
	evs := ids("s", 8)
	var want []string
	for _, id := range evs {
		p1.publish("order.created", id, "", `{}`)
		want = append(want, "one "+id, "two "+id)
	}
	rc.waitDelivered(want, 20*time.Second)
	p1.settled(10 * time.Second)

	// The first file drops "one": both processes stop delivering to it.
	next := *p1.cfg
	next.Endpoints = nil
	if err := p1.d.src.Apply(ctx5(t), &next); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the second process drops the endpoint the first file dropped", 10*time.Second, func() bool {
		_, ok := p2.d.table.Get("one")
		return !ok
	})
	if _, err := p1.shared.Get(ctx5(t), "one"); err == nil {
		t.Fatal("the dropped endpoint is still shared")
	}
	if _, ok := p1.d.table.Get("two"); !ok {
		t.Fatal("the first process lost the second's endpoint")
	}
	for _, id := range ids("t", 4) {
		p2.publish("order.created", id, "", `{}`)
		want = append(want, "two "+id)
	}
	rc.waitDelivered(want, 20*time.Second)
	for _, id := range ids("t", 4) {
		if rc.requests("one", id) != 0 {
			t.Fatalf("the dropped endpoint got %s", id)
		}
	}
}

// sharedNode starts the embedded server several engines of a test share
// (see sharing), with its streams, and returns it with their base config.
func sharedNode(t *testing.T) (*jetstream.Node, *config.Config) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.NATS.Listen = "127.0.0.1:-1"
	cfg.Security.AllowPrivateNetworks = true
	cfg.Defaults = fastSettings()
	log := slog.New(slog.DiscardHandler)
	node, err := jetstream.OpenNode(cfg.NATS, cfg.DataDir, "dispatch-test", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		node.CloseConn(time.Second, log)
		node.Shutdown()
	})
	if err := jetstream.EnsureStreams(ctx5(t), node.JetStream(), &cfg, log); err != nil {
		t.Fatal(err)
	}
	return node, &cfg
}

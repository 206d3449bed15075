package test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/cli"
	hjs "github.com/hookjet/hookjet/jetstream"
)

// natsNode is a nats-server run by the test, outside hookjet. It can be shut
// down and started again with the same options (port, store dir, routes).
type natsNode struct {
	t    testing.TB
	name string
	opts func() *server.Options // fresh options on every start: NewServer mutates them

	mu sync.Mutex
	s  *server.Server
}

// startNATSNode starts a node and stops it when the test ends.
func startNATSNode(t testing.TB, name string, opts func() *server.Options) *natsNode {
	t.Helper()
	n := &natsNode{t: t, name: name, opts: opts}
	n.start()
	t.Cleanup(n.shutdown)
	return n
}

func (n *natsNode) start() {
	n.t.Helper()
	s, err := server.NewServer(n.opts())
	if err != nil {
		n.t.Fatalf("nats-server %s: %v", n.name, err)
	}
	s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		s.Shutdown()
		n.t.Fatalf("nats-server %s not ready", n.name)
	}
	n.mu.Lock()
	n.s = s
	n.mu.Unlock()
}

// shutdown stops the node and waits until it is down; a stopped node is left
// alone.
func (n *natsNode) shutdown() {
	n.mu.Lock()
	s := n.s
	n.s = nil
	n.mu.Unlock()
	if s != nil {
		s.Shutdown()
		s.WaitForShutdown()
	}
}

func (n *natsNode) url() string {
	o := n.opts()
	return fmt.Sprintf("nats://%s:%d", o.Host, o.Port)
}

// standaloneNATS returns the options of a single JetStream server on a fixed
// loopback port, so that it can be restarted where clients expect it.
func standaloneNATS(t testing.TB) func() *server.Options {
	port, dir := freePort(t), t.TempDir()
	return func() *server.Options {
		return &server.Options{
			ServerName: "ext", Host: "127.0.0.1", Port: port,
			JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
		}
	}
}

// startCluster starts an in-process 3-node JetStream cluster on loopback and
// waits until it has a JetStream meta leader.
func startCluster(t testing.TB) []*natsNode {
	t.Helper()
	const size = 3
	clientPorts, routePorts := make([]int, size), make([]int, size)
	for i := range size {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
	}
	nodes := make([]*natsNode, size)
	for i := range size {
		var routes []string
		for j := range size {
			if j != i {
				routes = append(routes, fmt.Sprintf("nats-route://127.0.0.1:%d", routePorts[j]))
			}
		}
		name, dir, port, routePort := fmt.Sprintf("n%d", i+1), t.TempDir(), clientPorts[i], routePorts[i]
		nodes[i] = startNATSNode(t, name, func() *server.Options {
			return &server.Options{
				ServerName: name, Host: "127.0.0.1", Port: port,
				JetStream: true, StoreDir: dir, NoLog: true, NoSigs: true,
				Cluster: server.ClusterOpts{Name: "hookjet-test", Host: "127.0.0.1", Port: routePort},
				Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
			}
		})
	}
	nc, js := connectJS(t, clusterURL(nodes))
	defer nc.Close()
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err
	})
	return nodes
}

func clusterURL(nodes []*natsNode) string {
	urls := make([]string, len(nodes))
	for i, n := range nodes {
		urls[i] = n.url()
	}
	return strings.Join(urls, ",")
}

// connectJS connects the test's own client: it reconnects for ever, quickly,
// like a producer that must survive a server restart.
func connectJS(t testing.TB, url string) (*nats.Conn, natsjs.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond), nats.ReconnectJitter(0, 0))
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(nc.Close)
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// eventIDs returns n distinct event ids.
func eventIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s_%05d", prefix, i)
	}
	return ids
}

// pubStats counts what a retrying publisher did.
type pubStats struct {
	acked      atomic.Int64 // ids with a PubAck
	retries    atomic.Int64 // publishes repeated after an error
	duplicates atomic.Int64 // PubAcks that JetStream flagged as duplicates (a retry of a stored event)
}

// publishRetrying publishes one order.created event per id from workers
// goroutines, sleeping pace between publishes so that a fault lands while
// events are still being published. A publish waits at most 1.5 s for its
// PubAck; on any error it is repeated with the same Nats-Msg-Id, as a producer
// would, until it is acked or ctx ends.
func publishRetrying(ctx context.Context, js natsjs.JetStream, ids []string, workers int, pace time.Duration, st *pubStats) error {
	next := atomic.Int64{}
	errs := make(chan error, workers)
	for range workers {
		go func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= len(ids) {
					errs <- nil
					return
				}
				if err := publishOne(ctx, js, ids[i], st); err != nil {
					errs <- err
					return
				}
				time.Sleep(pace)
			}
		}()
	}
	var all []error
	for range workers {
		all = append(all, <-errs)
	}
	return errors.Join(all...)
}

// publishUntilAThird publishes ids in the background, retrying with the same
// Nats-Msg-Id, and returns once a third of them are acked: the moment to
// inject a fault. The channel yields the publisher's result.
func publishUntilAThird(t testing.TB, ctx context.Context, js natsjs.JetStream, ids []string, st *pubStats) <-chan error {
	t.Helper()
	published := make(chan error, 1)
	go func() { published <- publishRetrying(ctx, js, ids, 4, 2*time.Millisecond, st) }()
	checkFor(t, 20*time.Second, time.Millisecond, func() error {
		if n := st.acked.Load(); n < int64(len(ids))/3 {
			return fmt.Errorf("%d events acked", n)
		}
		return nil
	})
	return published
}

func publishOne(ctx context.Context, js natsjs.JetStream, id string, st *pubStats) error {
	var last error
	for attempt := 0; ; attempt++ {
		if ctx.Err() != nil {
			if last == nil {
				return fmt.Errorf("publish %s: %w", id, ctx.Err())
			}
			return fmt.Errorf("publish %s: gave up after %d attempts: %w (last error: %w)", id, attempt, ctx.Err(), last)
		}
		if attempt > 0 {
			st.retries.Add(1)
		}
		m := nats.NewMsg(hjs.EventsPrefix + "order.created")
		m.Header.Set(hjs.HdrMsgID, id)
		m.Data = fmt.Appendf(nil, `{"id":%q}`, id)
		pctx, cancel := context.WithTimeout(ctx, 1500*time.Millisecond)
		ack, err := js.PublishMsg(pctx, m)
		cancel()
		if err == nil {
			if ack.Duplicate {
				st.duplicates.Add(1)
			}
			st.acked.Add(1)
			return nil
		}
		last = err
		// No responders or no stream leader come back at once: do not spin.
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// missing returns how many ids r has not received and up to five of them.
func missing(r *receiver, ids []string) (int, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int
	var some []string
	for _, id := range ids {
		if r.perID[id] == 0 {
			n++
			if len(some) < 5 {
				some = append(some, id)
			}
		}
	}
	return n, some
}

// waitAllDelivered waits until r has received every id at least once.
func waitAllDelivered(t testing.TB, r *receiver, ids []string, timeout time.Duration) {
	t.Helper()
	checkFor(t, timeout, 20*time.Millisecond, func() error {
		if n, some := missing(r, ids); n > 0 {
			return fmt.Errorf("%d of %d events never arrived, e.g. %v", n, len(ids), some)
		}
		return nil
	})
}

// fanoutSettled says whether the fan-out consumer has no event pending or
// awaiting an ack.
func fanoutSettled(ctx context.Context, js natsjs.JetStream) error {
	c, err := js.Consumer(ctx, hjs.EventsStream, "hookjet-fanout")
	if err != nil {
		return err
	}
	ci, err := c.Info(ctx)
	if err != nil {
		return err
	}
	if ci.NumPending != 0 || ci.NumAckPending != 0 {
		return fmt.Errorf("fan-out: %d pending, %d awaiting ack", ci.NumPending, ci.NumAckPending)
	}
	return nil
}

// waitSettled waits until nothing is left for the endpoint: the fan-out
// consumer has no event pending or awaiting an ack, and HOOKJET_TASKS holds
// no task or scheduled retry of the endpoint. No further request can arrive.
func waitSettled(t testing.TB, js natsjs.JetStream, endpoint string, timeout time.Duration) {
	t.Helper()
	checkFor(t, timeout, 100*time.Millisecond, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := fanoutSettled(ctx, js); err != nil {
			return err
		}
		st, err := js.Stream(ctx, hjs.TasksStream)
		if err != nil {
			return err
		}
		for _, filter := range []string{hjs.TasksPrefix + endpoint, hjs.SchedPrefix + endpoint + ".*"} {
			info, err := st.Info(ctx, natsjs.WithSubjectFilter(filter))
			if err != nil {
				return err
			}
			for subj, n := range info.State.Subjects {
				if n > 0 {
					return fmt.Errorf("%d waiting on %s", n, subj)
				}
			}
		}
		return nil
	})
}

// The NATS server hookjet uses goes away in the middle of a stream of
// publishes and comes back on the same port with the same store. Producers
// retry with the same Nats-Msg-Id; every event still reaches the endpoint and
// hookjet keeps delivering afterwards without being restarted.
func TestExternalNATSRestartNoLoss(t *testing.T) {
	start := time.Now()
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL})
	cfg.NATS.URL = ns.url()
	h := startHookjet(t, cfg, cli.Options{})
	_, js := connectJS(t, ns.url())

	ids := eventIDs("evt_restart", 1500)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var st pubStats
	published := publishUntilAThird(t, ctx, js, ids, &st)
	atCrash := st.acked.Load()
	stopped := time.Now()
	ns.shutdown()
	time.Sleep(500 * time.Millisecond) // the outage
	ns.start()
	t.Logf("nats-server restarted after %d of %d events were acked", atCrash, len(ids))
	if atCrash >= int64(len(ids)) {
		t.Fatalf("every event was published before the restart: the test proves nothing")
	}

	if err := <-published; err != nil {
		t.Fatal(err)
	}
	waitAllDelivered(t, r, ids, 45*time.Second)
	t.Logf("all %d events arrived %s after the server was stopped", len(ids), time.Since(stopped).Round(time.Millisecond))

	// hookjet carries on: ready, and a new event is delivered.
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if code := h.api("GET", "/readyz", "", nil, nil); code != 200 {
			return fmt.Errorf("readyz: HTTP %d", code)
		}
		return nil
	})
	after := eventIDs("evt_after", 10)
	actx, acancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer acancel()
	if err := publishRetrying(actx, js, after, 1, 0, &st); err != nil {
		t.Fatal(err)
	}
	waitAllDelivered(t, r, after, 10*time.Second)
	t.Logf("requests %d for %d events (%d duplicate requests), publish retries %d, duplicate PubAcks %d, took %s",
		r.count(), len(ids)+len(after), r.count()-r.distinct(), st.retries.Load(), st.duplicates.Load(), time.Since(start).Round(time.Millisecond))
}

// A 3-node JetStream cluster loses the node leading HOOKJET_EVENTS while
// events are being published; producers retry with the same Nats-Msg-Id, the
// node comes back with its store, and nothing is lost.
func TestClusterNodeLossR3(t *testing.T) {
	start := time.Now()
	nodes := startCluster(t)
	r := newReceiver(t, []string{secretA, secretB}, nil)
	cfg := testConfig(t, t.TempDir(), "streams:\n  replicas: 3\n", endpointYAML{ID: "sink", URL: r.URL})
	cfg.NATS.URL = clusterURL(nodes)
	h := startHookjet(t, cfg, cli.Options{})
	_, js := connectJS(t, clusterURL(nodes))

	info := func() (*natsjs.StreamInfo, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		s, err := js.Stream(ctx, hjs.EventsStream)
		if err != nil {
			return nil, err
		}
		return s.Info(ctx)
	}
	si, err := info()
	if err != nil {
		t.Fatal(err)
	}
	if si.Config.Replicas != 3 || si.Cluster == nil || len(si.Cluster.Replicas) != 2 {
		t.Fatalf("stream %s: replicas %d, cluster %+v", hjs.EventsStream, si.Config.Replicas, si.Cluster)
	}
	var victim *natsNode
	for _, n := range nodes {
		if n.name == si.Cluster.Leader {
			victim = n
		}
	}
	if victim == nil {
		t.Fatalf("stream leader %q is none of the nodes", si.Cluster.Leader)
	}

	ids := eventIDs("evt_r3", 1500)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var st pubStats
	published := publishUntilAThird(t, ctx, js, ids, &st)
	atCrash := st.acked.Load()
	stopped := time.Now()
	victim.shutdown()
	t.Logf("stopped %s (stream leader) after %d of %d events were acked", victim.name, atCrash, len(ids))
	// Publishing goes on while the node is away: until the stream has a new leader.
	checkFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		si, err := info()
		if err != nil {
			return err
		}
		if si.Cluster == nil || si.Cluster.Leader == "" || si.Cluster.Leader == victim.name {
			return fmt.Errorf("stream leader %+v", si.Cluster)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	victim.start()
	if atCrash >= int64(len(ids)) {
		t.Fatalf("every event was published before the node was stopped: the test proves nothing")
	}

	if err := <-published; err != nil {
		t.Fatal(err)
	}
	// An event the server had sent on the connection that died reaches no
	// one and comes back only after the fan-out's AckWait (45 s with the
	// default 15 s timeout): wait that long and then some.
	waitAllDelivered(t, r, ids, 75*time.Second)
	t.Logf("all %d events arrived %s after the node was stopped", len(ids), time.Since(stopped).Round(time.Millisecond))
	// The restarted node catches up and the stream is whole again.
	checkFor(t, 15*time.Second, 100*time.Millisecond, func() error {
		si, err := info()
		if err != nil {
			return err
		}
		if si.Cluster == nil || si.Cluster.Leader == "" || len(si.Cluster.Replicas) != 2 {
			return fmt.Errorf("cluster %+v", si.Cluster)
		}
		for _, p := range si.Cluster.Replicas {
			if !p.Current || p.Offline {
				return fmt.Errorf("replica %s: current %v offline %v", p.Name, p.Current, p.Offline)
			}
		}
		return nil
	})
	// hookjet carries on: ready, and new events are delivered.
	if code := h.api("GET", "/readyz", "", nil, nil); code != 200 {
		t.Fatalf("readyz: HTTP %d", code)
	}
	after := eventIDs("evt_r3_after", 10)
	actx, acancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer acancel()
	if err := publishRetrying(actx, js, after, 1, 0, &st); err != nil {
		t.Fatal(err)
	}
	waitAllDelivered(t, r, after, 10*time.Second)
	t.Logf("requests %d for %d events (%d duplicate requests), publish retries %d, duplicate PubAcks %d, took %s",
		r.count(), len(ids)+len(after), r.count()-r.distinct(), st.retries.Load(), st.duplicates.Load(), time.Since(start).Round(time.Millisecond))
}

// successes sums hookjet_attempts_total{class="success"} in reg.
func successes(t testing.TB, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != "hookjet_attempts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" && l.GetValue() == "success" {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// Two hookjet processes on one NATS server share one endpoint's consumer:
// every event is delivered exactly once in normal operation and each process
// does a fair part of the work.
func TestTwoProcessesShareWork(t *testing.T) {
	start := time.Now()
	ns := startNATSNode(t, "ext", standaloneNATS(t))
	r := newReceiver(t, []string{secretA, secretB}, nil)
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	for _, reg := range regs {
		cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "sink", URL: r.URL})
		cfg.NATS.URL = ns.url()
		startHookjet(t, cfg, cli.Options{Registry: reg})
	}
	_, js := connectJS(t, ns.url())

	ids := eventIDs("evt_share", 1000)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var st pubStats
	if err := publishRetrying(ctx, js, ids, 8, 0, &st); err != nil {
		t.Fatal(err)
	}
	waitAllDelivered(t, r, ids, 30*time.Second)
	waitSettled(t, js, "sink", 10*time.Second)

	if dup := r.count() - r.distinct(); dup != 0 || st.retries.Load() != 0 {
		t.Errorf("%d duplicate requests, %d publish retries; want none without a fault", dup, st.retries.Load())
	}
	a, b := successes(t, regs[0]), successes(t, regs[1])
	t.Logf("process 1 delivered %v, process 2 delivered %v, took %s", a, b, time.Since(start).Round(time.Millisecond))
	if a+b != float64(r.count()) {
		t.Errorf("processes counted %v+%v successes, the receiver got %d requests", a, b, r.count())
	}
	for i, n := range []float64{a, b} {
		if n < float64(len(ids))/10 {
			t.Errorf("process %d delivered %v of %d events, want at least 10%%", i+1, n, len(ids))
		}
	}
}

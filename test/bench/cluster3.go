package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/internal/natscluster"
)

// clusterBinary is the nats-server the cluster3 scenario runs, built from
// go.mod's module when missing (make bin/nats-server does the same).
const clusterBinary = "bin/nats-server"

// cluster3 is the cluster target: one hookjet (in this process) on a
// real 3-node JetStream cluster of separate nats-server processes on this
// machine, R3 streams, 10 healthy endpoints; then, on the same cluster,
// three processes (cluster3x3), one with the delivery log off
// (cluster3nolog: what the log's R3 writes cost), and the JetStream-only floor (the same publisher, an R3 stream and one consumer
// that acks). The nodes keep the server's default sync interval. CPU figures
// cover this process only, not the three nats-server processes.
func (b *bench) cluster3(ctx context.Context) []runFunc {
	p := b.p
	events := p.events / 3
	var c *natscluster.Cluster
	var dir string
	closeCluster := func() {
		if c != nil {
			c.Close()
			c = nil
			_ = os.RemoveAll(dir)
		}
	}
	return []runFunc{
		func() (*result, error) {
			var err error
			if c, dir, err = b.startCluster(ctx); err != nil {
				return nil, err
			}
			r, err := b.throughput(ctx, throughputSpec{name: "cluster3", cluster: c,
				description: fmt.Sprintf("one hookjet on a 3-node cluster of nats-server processes (R3), 10 healthy endpoints, %d events, max_in_flight %d", events, p.maxInFlight),
				behave:      allHealthy(10), events: events, maxInFlight: p.maxInFlight, bound: 2 * p.bound})
			if err != nil {
				closeCluster()
			}
			return r, err
		},
		func() (*result, error) {
			if c == nil {
				return nil, fmt.Errorf("cluster3x3: no cluster")
			}
			// A fresh start: the events' ids are the same as cluster3's,
			// which the streams and the ledger would take for duplicates.
			if err := deleteStreams(ctx, c.URL()); err != nil {
				closeCluster()
				return nil, err
			}
			r, err := b.throughput(ctx, throughputSpec{name: "cluster3x3", cluster: c, processes: 3,
				description: fmt.Sprintf("three hookjet processes (in this process, each connected to its own node) on the same cluster, 10 healthy endpoints, %d events, max_in_flight %d", events, p.maxInFlight),
				behave:      allHealthy(10), events: events, maxInFlight: p.maxInFlight, bound: 2 * p.bound})
			if err != nil {
				closeCluster()
			}
			return r, err
		},
		func() (*result, error) {
			// What the delivery log costs on the cluster (an R3 write per
			// attempt): the ceiling of batching its records.
			if c == nil {
				return nil, fmt.Errorf("cluster3nolog: no cluster")
			}
			if err := deleteStreams(ctx, c.URL()); err != nil {
				closeCluster()
				return nil, err
			}
			r, err := b.throughput(ctx, throughputSpec{name: "cluster3nolog", cluster: c, logOff: true,
				description: fmt.Sprintf("cluster3 with log.enabled false: one hookjet on the same cluster, 10 healthy endpoints, %d events, max_in_flight %d", events, p.maxInFlight),
				behave:      allHealthy(10), events: events, maxInFlight: p.maxInFlight, bound: 2 * p.bound})
			if err != nil {
				closeCluster()
			}
			return r, err
		},
		func() (*result, error) {
			defer closeCluster()
			if c == nil {
				return nil, fmt.Errorf("cluster3floor: no cluster")
			}
			if err := deleteStreams(ctx, c.URL()); err != nil {
				return nil, err
			}
			return b.throughput(ctx, throughputSpec{name: "cluster3floor", floor: true, cluster: c,
				description: fmt.Sprintf("JetStream-only floor on the same cluster: %d events, R3 stream, one durable consumer, ack; TCP connections, no HTTP", events),
				behave:      allHealthy(10), events: events, bound: 2 * p.bound})
		},
	}
}

// startCluster starts the three nodes in a new temporary directory.
func (b *bench) startCluster(ctx context.Context) (*natscluster.Cluster, string, error) {
	if err := natscluster.EnsureBinary(ctx, ".", clusterBinary, b.progress); err != nil {
		return nil, "", err
	}
	dir, err := os.MkdirTemp("", "hookjet-cluster3-")
	if err != nil {
		return nil, "", err
	}
	b.say("cluster3: starting 3 nats-server processes")
	c, err := natscluster.Start(ctx, natscluster.Options{Binary: clusterBinary, Dir: filepath.Join(dir, "nats"), Name: "bench"})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", err
	}
	return c, dir, nil
}

// startOnCluster starts hookjet, or the floor, for s on s.cluster.
func (b *bench) startOnCluster(ctx context.Context, s throughputSpec, x *tally, rec *receiver, r *result) (*instance, error) {
	url := s.cluster.URL()
	if s.floor {
		b.say("%s: starting the JetStream-only floor on the cluster", s.name)
		return startClusterFloor(ctx, x, url, b.logOut)
	}
	spec, err := s.hookjetSpec(b, rec)
	if err != nil {
		return nil, err
	}
	spec.natsURL = url
	nodes := s.cluster.Nodes()
	if s.processes > 1 {
		spec.natsURL = nodes[0].URL()
	}
	b.say("%s: starting %d hookjet process(es) with %d endpoints on the cluster", s.name, max(1, s.processes), len(spec.endpoints))
	h, err := startHookjet(ctx, spec, b.logOut)
	if err != nil {
		return nil, err
	}
	r.ConfigSeconds = round(h.parse.Seconds(), 3)
	for i := 1; i < s.processes; i++ {
		spec.natsURL = nodes[i%len(nodes)].URL()
		o, err := startHookjet(ctx, spec, b.logOut)
		if err != nil {
			h.stop()
			return nil, fmt.Errorf("hookjet process %d: %w", i+1, err)
		}
		h.others = append(h.others, o)
	}
	return h, nil
}

// processDeliveries reads each hookjet process's successful attempts from
// its admin API's /metrics: h's, then its others'; -1 where they cannot be
// read.
func processDeliveries(ctx context.Context, h *instance) []float64 {
	var out []float64
	for _, in := range append([]*instance{h}, h.others...) {
		text, err := metricsText(ctx, "http://"+in.srv.AdminAddr())
		if err != nil {
			out = append(out, -1)
			continue
		}
		var n float64
		for line := range strings.Lines(text) {
			rest, ok := strings.CutPrefix(line, "hookjet_attempts_total{")
			if !ok {
				continue
			}
			labels, value, ok := strings.Cut(rest, "} ")
			if !ok || label(labels, "class") != "success" {
				continue
			}
			if v, err := strconv.ParseFloat(strings.TrimSpace(value), 64); err == nil {
				n += v
			}
		}
		out = append(out, n)
	}
	return out
}

// startClusterFloor creates the floor's R3 stream and consumer on the
// cluster at url and connects the publisher, both over TCP.
func startClusterFloor(ctx context.Context, x *tally, url string, logOut io.Writer) (*instance, error) {
	dir, err := os.MkdirTemp("", "hookjet-floor-")
	if err != nil {
		return nil, err
	}
	h := &instance{dir: dir, logs: newLogCounter(logOut, slog.LevelWarn)}
	start := time.Now()
	if err := h.connectPublisher(url); err != nil {
		h.stop()
		return nil, err
	}
	dial := func(name string) (*nats.Conn, error) { return nats.Connect(url, nats.Name(name)) }
	if err := h.consumeFloor(ctx, x.floorHandler, 3, dial); err != nil {
		h.stop()
		return nil, err
	}
	h.startup = time.Since(start)
	return h, nil
}

// deleteStreams deletes every stream on the cluster (hookjet's, before the
// floor creates one on the same subjects).
func deleteStreams(ctx context.Context, url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := natsjs.New(nc)
	if err != nil {
		return err
	}
	names := js.StreamNames(ctx)
	var all []string
	for n := range names.Name() {
		all = append(all, n)
	}
	if err := names.Err(); err != nil {
		return err
	}
	for _, n := range all {
		if err := js.DeleteStream(ctx, n); err != nil {
			return fmt.Errorf("delete stream %s: %w", n, err)
		}
	}
	return nil
}

// clusterTargets are the cluster target: one hookjet on the 3-node
// cluster keeps at least 50% of the embedded rate (DESIGN: ">= 0.5") of the same run, with the
// same sync policy (the nodes keep the server's default interval, as
// healthy10fast's embedded server does); its ratios to embedded hookjet with
// nats.sync always (healthy10) and to the floor on the same cluster are
// reported beside it.
func clusterTargets(get func(string) *result) []target {
	c3 := get("cluster3")
	rate := func(r *result) float64 { return r.PerSecond }
	x3 := get("cluster3x3")
	cs := []check{
		ratioCheck("one hookjet on a 3-node cluster (R3, separate processes, sync 2m) vs embedded with nats.sync 2m, 10 endpoints", ">= 50%", 50, c3, get("healthy10fast"), "cluster3 and healthy10fast", rate),
		ratioCheck("one hookjet on a 3-node cluster vs embedded with nats.sync always", "reported", 0, c3, get("healthy10"), "cluster3 and healthy10", rate),
		ratioCheck("one hookjet on a 3-node cluster vs the JetStream-only floor on it", "reported", 0, c3, get("cluster3floor"), "cluster3", rate),
		ratioCheck("one hookjet on a 3-node cluster, delivery log off vs on", "reported", 0, get("cluster3nolog"), c3, "cluster3", rate),
		ratioCheck("three hookjet processes on the 3-node cluster together vs one on it", ">= 90%", 90, x3, c3, "cluster3", rate),
		shareCheck(x3),
		ratioCheck("three hookjet processes on the 3-node cluster vs the JetStream-only floor on it", "reported", 0, x3, get("cluster3floor"), "cluster3", rate),
	}
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}

// shareCheck is the smallest share of r's deliveries that one of its
// hookjet processes made: each of three takes at least 20%.
func shareCheck(r *result) check {
	c := check{name: "three hookjet processes on the 3-node cluster: the smallest one's share of the deliveries", goal: ">= 20%", unit: "%", need: "cluster3"}
	if r == nil || len(r.ProcessDeliveries) < 2 {
		return c
	}
	var sum float64
	low := r.ProcessDeliveries[0]
	parts := make([]string, len(r.ProcessDeliveries))
	for i, n := range r.ProcessDeliveries {
		sum += n
		low = min(low, n)
		parts[i] = fmt.Sprintf("%.0f", n)
	}
	if sum <= 0 || low < 0 {
		return c
	}
	c.value = 100 * low / sum
	c.ok = ptr(c.value >= 20 && r.Complete)
	c.detail = "successful attempts per process: " + strings.Join(parts, ", ")
	return c
}

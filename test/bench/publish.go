package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/publish"
)

// The three ways in, compared: a plain JetStream publish per event (one
// synced write each), a NATS request to hookjet.publish.<type> and
// POST /api/v1/events (both group-committed), each with 1, 16 and 64
// clients that send one event and wait for its answer before the next, in
// both nats.sync modes; and HTTP at 1,000 requests/s for its latency.

// publishPaths are the ways in, publishClients the concurrent clients.
var (
	publishPaths   = []string{"jetstream", "request", "http"}
	publishClients = []int{1, 16, 64}
)

// publishRate is the offered rate of the paced HTTP run.
const publishRate = 1000

// publishScenarios is the "publish" scenario: every path, client count and
// sync mode, each hookjet (one per sync mode) serving its nine runs.
func (b *bench) publishScenarios(ctx context.Context) map[string][]runFunc {
	var runs []runFunc
	for _, mode := range []string{"always", fastSync} {
		var h *instance
		start := func() (*instance, error) {
			if h != nil {
				return h, nil
			}
			var err error
			h, err = startHookjet(ctx, hookjetSpec{maxInFlight: 16, concurrency: 16, sync: mode}, b.logOut)
			return h, err
		}
		for _, path := range publishPaths {
			for _, n := range publishClients {
				runs = append(runs, func() (*result, error) {
					h, err := start()
					if err != nil {
						return nil, err
					}
					return b.publishRun(ctx, h, path, mode, n, 0)
				})
			}
		}
		runs = append(runs, func() (*result, error) {
			h, err := start()
			if err != nil {
				return nil, err
			}
			defer func() { h.stop(); h = nil }()
			return b.publishRun(ctx, h, "http", mode, 64, publishRate)
		})
	}
	return map[string][]runFunc{"publish": runs}
}

// publishName names a run: publish_<path>_<sync>_<clients>, or
// publish_http_<sync>_1000rps for the paced one.
func publishName(path, mode string, clients int, rate float64) string {
	if mode == fastSync {
		mode = "lazy"
	}
	if rate > 0 {
		return fmt.Sprintf("publish_%s_%s_%.0frps", path, mode, rate)
	}
	return fmt.Sprintf("publish_%s_%s_%d", path, mode, clients)
}

// publishRun sends unique 500 B events for rawDuration from clients
// goroutines (or at rate requests/s for latencyDuration), each waiting for
// its event's answer, and measures events/s and the time per request.
func (b *bench) publishRun(ctx context.Context, h *instance, path, mode string, clients int, rate float64) (*result, error) {
	name := publishName(path, mode, clients, rate)
	r := &result{Name: name, Complete: true, StartupSeconds: round(h.startup.Seconds(), 3)}
	duration := b.p.rawDuration
	r.Description = fmt.Sprintf("%s with nats.sync %s: %d clients for %s, each sending a unique 500 B event and waiting until it is stored", map[string]string{
		"jetstream": "JetStream publish to hookjet.events.<type> (one synced write each)",
		"request":   "NATS request to hookjet.publish.<type> (group commit)",
		"http":      "POST /api/v1/events, one event per request (group commit)",
	}[path], mode, clients, duration)
	if rate > 0 {
		duration = b.p.latencyDuration
		r.OfferedRate = rate
		r.Description = fmt.Sprintf("POST /api/v1/events with nats.sync %s at %.0f requests/s for %s, one 500 B event each: time from sending to the 202 (stored)", mode, rate, duration)
	}
	send, closeFn := publishSender(h, path, clients)
	defer closeFn()
	var n, errs atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	do := func(ctx context.Context, i int64) {
		t0 := time.Now()
		if err := send(ctx, name+"-"+strconv.FormatInt(i, 10)); err != nil {
			if ctx.Err() == nil {
				errs.Add(1)
			}
			return
		}
		d := time.Since(t0)
		mu.Lock()
		lat = append(lat, d)
		mu.Unlock()
	}
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	profiled := "-" // -profile publish: the NATS request run at 64 clients with nats.sync always
	if name == publishName("request", "always", 64, 0) {
		profiled = "publish"
	}
	stopProfile, err := b.startProfile(profiled)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	if rate > 0 {
		paceRequests(runCtx, clients, rate, t0, &n, do)
	} else {
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for runCtx.Err() == nil {
					do(runCtx, n.Add(1))
				}
			})
		}
		wg.Wait()
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	stopProfile()
	r.setOther(m0, cpu, elapsed)
	r.Delivered = int64(len(lat))
	r.Errors = errs.Load()
	r.setRate(elapsed, cpu)
	r.Latency = ptr(summarise(lat))
	if rate > 0 {
		r.AchievedRate = r.PerSecond
	}
	b.say("%s: %d events in %.2fs = %.0f/s; p50 %.2fms p99 %.2fms; %d errors", name, r.Delivered, r.Seconds, r.PerSecond, r.Latency.P50, r.Latency.P99, r.Errors)
	r.PeakRSSMB = peakMB()
	r.collectLogs(h)
	return r, ctx.Err()
}

// publishSender returns the function that stores one event by path, and
// what closes its connections.
func publishSender(h *instance, path string, clients int) (func(context.Context, string) error, func()) {
	body := inboundBody("bench")
	switch path {
	case "jetstream":
		return func(ctx context.Context, id string) error {
			m := nats.NewMsg(jetstream.EventsPrefix + "bench.created")
			m.Header.Set(jetstream.HdrMsgID, id)
			m.Data = body
			_, err := h.js.PublishMsg(ctx, m)
			return err
		}, func() {}
	case "request":
		return func(ctx context.Context, id string) error {
			_, err := jetstream.PublishRequest(ctx, h.nc, publish.Event{ID: id, Type: "bench.created", Data: body})
			return err
		}, func() {}
	}
	client := rawClient(clients)
	url := "http://" + h.srv.AdminAddr() + "/api/v1/events"
	return func(ctx context.Context, id string) error {
		req, _ := json.Marshal(map[string]any{"id": id, "type": "bench.created", "data": json.RawMessage(body)})
		hr, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(req))
		if err != nil {
			return err
		}
		hr.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(hr)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	}, client.CloseIdleConnections
}

// publishTargets compare the group-committed paths with JetStream's own
// individual publishes at 64 clients with nats.sync always, and the HTTP
// route's p99 at 1,000 requests/s.
func publishTargets(get func(string) *result) []target {
	js := get(publishName("jetstream", "always", 64, 0))
	perSecond := func(r *result) float64 { return r.PerSecond }
	cs := []check{
		ratioCheck("publish, nats.sync always, 64 clients: HTTP events/s vs JetStream individual publishes", ">= 300%", 300,
			get(publishName("http", "always", 64, 0)), js, "publish", perSecond),
		ratioCheck("publish, nats.sync always, 64 clients: NATS request events/s vs JetStream individual publishes", ">= 300%", 300,
			get(publishName("request", "always", 64, 0)), js, "publish", perSecond),
	}
	c := check{name: "publish: p99 of a one-event HTTP request at 1,000 requests/s (nats.sync always)", goal: "<= 20 ms", unit: "ms", need: "publish"}
	if paced := get(publishName("http", "always", 64, publishRate)); paced != nil && paced.Latency != nil {
		c.value, c.ok = paced.Latency.P99, ptr(paced.Latency.P99 <= 20 && paced.AchievedRate >= 0.95*publishRate)
		c.detail = fmt.Sprintf("achieved %.0f/s, p50 %.2f ms, max %.2f ms", paced.AchievedRate, paced.Latency.P50, paced.Latency.Max)
	}
	cs = append(cs, c)
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}

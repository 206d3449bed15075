package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/inbound"
	"github.com/hookjet/hookjet/internal/freeport"
	"github.com/hookjet/hookjet/server"
)

// inboundSource is the source the inbound scenarios post to: GitHub's
// scheme (HMAC-SHA256 of the body), ids in X-GitHub-Delivery.
const inboundSource = `inbound:
  listen: 127.0.0.1:0
  sources:
    - id: gh
      scheme: github
      secrets: [bench-inbound-secret]
`

// inboundRate is the offered rate of the latency run.
const inboundRate = 1000

// inboundScenarios are the inbound gateway's runs: accepted requests/s
// against the raw HTTP ceiling (inbound) and against what JetStream alone
// stores from as many publishers in the same sync mode (inboundfloor; the
// same pair with the lazy sync: inboundfast, inboundfloorfast), the accept
// latency at 1,000 requests/s (inbound1000), and forged requests' cost
// (inboundforged).
func (b *bench) inboundScenarios(ctx context.Context) map[string][]runFunc {
	return map[string][]runFunc{"inbound": {
		func() (*result, error) { return b.inboundRun(ctx, "inbound", false, 0) },
		func() (*result, error) { return b.inboundRun(ctx, "inboundfloor", false, 0) },
		func() (*result, error) { return b.inboundRun(ctx, "inboundfast", false, 0) },
		func() (*result, error) { return b.inboundRun(ctx, "inboundfloorfast", false, 0) },
		func() (*result, error) { return b.inboundRun(ctx, "inbound1000", false, inboundRate) },
		func() (*result, error) { return b.inboundRun(ctx, "raw1000", false, inboundRate) },
		func() (*result, error) { return b.inboundRun(ctx, "inboundforged", true, 0) },
	}}
}

// inboundSync is the nats.sync of an inbound run: the lazy one for the
// runs named ...fast, always otherwise.
func inboundSync(name string) string {
	if strings.HasSuffix(name, "fast") {
		return fastSync
	}
	return ""
}

// inboundFloor reports whether the run publishes to JetStream directly
// (the floor) instead of posting to the gateway.
func inboundFloor(name string) bool { return strings.HasPrefix(name, "inboundfloor") }

// rawTarget is the raw receiver raw1000 posts to instead of the gateway:
// the machine's own HTTP latency at the same rate, beside inbound1000.
func (b *bench) rawTarget() (*instance, string, func(), error) {
	rec, err := newReceiver(b.key, newTally(allHealthy(1), 0, false))
	if err != nil {
		return nil, "", nil, err
	}
	return &instance{logs: newLogCounter(b.logOut, slog.LevelWarn)}, rec.url(0), rec.close, nil
}

// startInbound starts hookjet with no endpoints and the inbound gateway,
// with nats.sync sync ("": always), and connects h.js to its NATS.
func startInbound(ctx context.Context, logOut io.Writer, sync string) (*instance, string, error) {
	dir, err := os.MkdirTemp("", "hookjet-bench-inbound-")
	if err != nil {
		return nil, "", err
	}
	h := &instance{dir: dir, logs: newLogCounter(logOut, slog.LevelWarn)}
	port, err := freeport.Port()
	if err != nil {
		h.stop()
		return nil, "", err
	}
	yaml := configYAML(dir, port, hookjetSpec{maxInFlight: 16, concurrency: 16, sync: sync}) + inboundSource
	cfg, err := config.Parse([]byte(yaml), benchEnv(hookjetSpec{}))
	if err != nil {
		h.stop()
		return nil, "", fmt.Errorf("config: %w", err)
	}
	start := time.Now()
	if h.srv, err = server.Start(ctx, cfg, server.Options{Log: slog.New(h.logs)}); err != nil {
		h.stop()
		return nil, "", fmt.Errorf("start hookjet: %w", err)
	}
	h.startup = time.Since(start)
	if h.nc, err = nats.Connect(fmt.Sprintf("nats://127.0.0.1:%d", port)); err == nil {
		h.js, err = natsjs.New(h.nc)
	}
	if err != nil {
		h.stop()
		return nil, "", fmt.Errorf("connect: %w", err)
	}
	return h, "http://" + h.srv.InboundAddr() + inbound.Prefix + "gh", nil
}

// inboundRun posts signed (or, forged, wrongly signed) unique events for
// rawDuration with concurrency goroutines, or at rate requests/s for
// latencyDuration when rate > 0, and measures requests/s, CPU and the time
// from sending to the gateway's answer.
func (b *bench) inboundRun(ctx context.Context, name string, forged bool, rate float64) (*result, error) {
	var h *instance
	var url string
	var err error
	if name == "raw1000" {
		var closeRec func()
		if h, url, closeRec, err = b.rawTarget(); err != nil {
			return nil, err
		}
		defer closeRec()
	} else {
		if h, url, err = startInbound(ctx, b.logOut, inboundSync(name)); err != nil {
			return nil, err
		}
		defer h.stop()
	}
	src := config.InboundSource{ID: "gh", Scheme: config.SchemeGitHub, Secrets: []config.Secret{config.NewSecret("bench-inbound-secret")}}
	if forged {
		src.Secrets = []config.Secret{config.NewSecret("not-the-secret")}
	}
	want := http.StatusOK
	if forged {
		want = http.StatusUnauthorized
	}
	r := &result{Name: name, Complete: true, StartupSeconds: round(h.startup.Seconds(), 3)}
	workers, duration := b.p.concurrency, b.p.rawDuration
	switch {
	case rate > 0:
		workers, duration = 64, b.p.latencyDuration
		r.OfferedRate = rate
		r.Description = fmt.Sprintf("inbound gateway, scheme github, unique 500 B events at %.0f requests/s for %s: time from sending to the 2xx (stored)", rate, duration)
		if name == "raw1000" {
			r.Description = fmt.Sprintf("raw HTTP baseline of inbound1000: the same client and rate for %s against the bench receiver", duration)
		}
	case forged:
		r.Description = fmt.Sprintf("inbound gateway, %d goroutines for %s, every request signed with a wrong secret (401, nothing stored)", workers, duration)
	case inboundFloor(name):
		r.Description = fmt.Sprintf("JetStream alone, the floor of the gateway: %d goroutines for %s publishing unique 500 B events to HOOKJET_INBOUND (hookjet.inbound.gh.push), each waiting for its PubAck, nats.sync %s", workers, duration, syncName(inboundSync(name)))
	default:
		r.Description = fmt.Sprintf("inbound gateway, scheme github, %d goroutines for %s, unique 500 B events, each answered 2xx after its PubAck, nats.sync %s", workers, duration, syncName(inboundSync(name)))
	}
	client := rawClient(workers)
	defer client.CloseIdleConnections()
	var n, bad, errs atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	send := func(ctx context.Context, i int64) {
		id := "d" + strconv.FormatInt(i, 10)
		body := inboundBody(id)
		if inboundFloor(name) {
			m := nats.NewMsg("hookjet.inbound.gh.push")
			m.Header.Set("Nats-Msg-Id", "gh-"+id)
			m.Data = body
			if _, err := h.js.PublishMsg(ctx, m); err != nil && ctx.Err() == nil {
				errs.Add(1)
			}
			return
		}
		hdr, _ := inbound.Sign(src, id, "push", body, time.Now())
		t0 := time.Now()
		code, err := inboundPost(ctx, client, url, hdr, body)
		d := time.Since(t0)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				errs.Add(1)
			}
			return
		case code != want && (want != http.StatusOK || code/100 != 2):
			bad.Add(1)
			return
		}
		if rate > 0 {
			mu.Lock()
			lat = append(lat, d)
			mu.Unlock()
		}
	}
	r.PeakRSSPerScenario = resetPeakRSS()
	r.GoroutinesBefore = runtime.NumGoroutine()
	stopProfile, err := b.startProfile(name) // -profile inbound: the accepted run
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	runCtx, cancel := context.WithTimeout(ctx, duration)
	defer cancel()
	cpu0, t0, m0 := cpuTime(), time.Now(), machineCPU()
	if rate > 0 {
		paceRequests(runCtx, workers, rate, t0, &n, send)
	} else {
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for runCtx.Err() == nil {
					send(runCtx, n.Add(1))
				}
			})
		}
		wg.Wait()
	}
	elapsed, cpu := time.Since(t0), cpuTime()-cpu0
	stopProfile()
	r.setOther(m0, cpu, elapsed)
	r.Delivered = n.Load() - errs.Load() - bad.Load()
	r.Errors, r.BadRequests = errs.Load(), bad.Load()
	r.setRate(elapsed, cpu)
	if rate > 0 {
		r.AchievedRate = r.PerSecond
		r.Latency = ptr(summarise(lat))
		b.say("%s: offered %.0f/s achieved %.0f/s; p50 %.2fms p99 %.2fms max %.2fms", name, rate, r.AchievedRate, r.Latency.P50, r.Latency.P99, r.Latency.Max)
	} else {
		b.say("%s: %d requests in %.2fs = %.0f/s, CPU %.3f s per 1000", name, r.Delivered, r.Seconds, r.PerSecond, r.CPUSecondsPer1000)
	}
	r.PeakRSSMB = peakMB()
	r.collectLogs(h)
	return r, ctx.Err()
}

// paceRequests calls send at rate from workers goroutines, the first at t0,
// until ctx ends.
func paceRequests(ctx context.Context, workers int, rate float64, t0 time.Time, n *atomic.Int64, send func(context.Context, int64)) {
	interval := time.Duration(float64(time.Second) / rate)
	jobs := make(chan int64, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range jobs {
				send(ctx, i)
			}
		})
	}
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for sent := int64(0); ctx.Err() == nil; {
		due := int64(time.Since(t0)/interval) + 1
		for ; sent < due && ctx.Err() == nil; sent++ {
			jobs <- n.Add(1)
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	close(jobs)
	wg.Wait()
}

// inboundBody is a 500-byte JSON event.
func inboundBody(id string) []byte {
	b := fmt.Appendf(nil, `{"id":%q,"action":"opened","pad":"`, id)
	b = append(b, bytes.Repeat([]byte("x"), max(0, 498-len(b)))...)
	return append(b, `"}`...)
}

func inboundPost(ctx context.Context, c *http.Client, url string, h http.Header, body []byte) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header = h
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	return resp.StatusCode, err
}

// inboundTargets are the inbound gateway's targets, from the inbound runs and raw.
func inboundTargets(get func(string) *result) []target {
	raw, acc, paced, forged, rawPaced := get("raw"), get("inbound"), get("inbound1000"), get("inboundforged"), get("raw1000")
	cs := []check{ratioCheck("inbound gateway: accepted requests/s vs raw HTTP ceiling", ">= 50%", 50, acc, raw,
		"inbound and raw", func(r *result) float64 { return r.PerSecond })}
	for _, sync := range []string{"", "fast"} {
		cs = append(cs, ratioCheck("inbound gateway: accepted requests/s vs JetStream alone storing from as many publishers, nats.sync "+syncName(inboundSync("x"+sync)),
			">= 80%", 80, get("inbound"+sync), get("inboundfloor"+sync), "inbound", func(r *result) float64 { return r.PerSecond }))
	}
	c := check{name: "inbound gateway: p99 from sending to the 2xx at 1,000 requests/s", goal: "<= 10 ms", unit: "ms", need: "inbound"}
	if paced != nil && paced.Latency != nil {
		c.value, c.ok = paced.Latency.P99, ptr(paced.Latency.P99 <= 10 && paced.AchievedRate >= 0.95*inboundRate)
		c.detail = fmt.Sprintf("achieved %.0f/s, p50 %.2f ms, max %.2f ms", paced.AchievedRate, paced.Latency.P50, paced.Latency.Max)
		if rawPaced != nil && rawPaced.Latency != nil {
			c.detail += fmt.Sprintf("; raw HTTP at the same rate: p50 %.2f ms, p99 %.2f ms", rawPaced.Latency.P50, rawPaced.Latency.P99)
		}
	}
	cs = append(cs, c)
	c = check{name: "inbound gateway: CPU of a forged request vs an accepted one (whole process, client included)", goal: "report", unit: "%", need: "inbound"}
	if acc != nil && forged != nil && acc.CPUSecondsPer1000 > 0 {
		c.value, c.ok = 100*forged.CPUSecondsPer1000/acc.CPUSecondsPer1000, ptr(true)
		c.detail = fmt.Sprintf("%.3f vs %.3f CPU s per 1000 requests; %.0f forged/s; the handler alone: BenchmarkInbound* in ./test", forged.CPUSecondsPer1000, acc.CPUSecondsPer1000, forged.PerSecond)
	}
	cs = append(cs, c)
	ts := make([]target, len(cs))
	for i, c := range cs {
		ts[i] = c.target()
	}
	return ts
}

// syncName says a nats.sync for a description: "always" for "".
func syncName(sync string) string {
	if sync == "" {
		return "always"
	}
	return sync
}

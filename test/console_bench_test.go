package test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
)

// BenchmarkConsolePages renders every console page, and the portal's home,
// against a hookjet with 100,000 configured endpoints (10 of them with a
// dead letter, so the overview has endpoints that need attention), and
// reports the server's own time per page (the Server-Timing header the
// console sets) as server-ms/op.
//
//	go test -run '^$' -bench ConsolePages -benchtime 20x ./test
func BenchmarkConsolePages(b *testing.B) {
	const n = 100000
	bad := newReceiver(b, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) { w.WriteHeader(http.StatusBadRequest) })
	cfg := testConfig(b, b.TempDir(), "")
	for i := range n {
		cfg.Endpoints = append(cfg.Endpoints, config.Endpoint{
			ID: fmt.Sprintf("ep-%06d", i), URL: bad.URL, Events: []string{fmt.Sprintf("t%d.>", i)},
			Tenant: fmt.Sprintf("tenant%d", i%1000), Description: "endpoint " + strconv.Itoa(i),
			Secrets: []config.Secret{config.NewSecret(secretA), config.NewSecret(secretB)}, Settings: cfg.Defaults,
			Source: config.SourceConfig,
		})
	}
	cfg.Security.MaxEndpoints = n
	cfg.Log.Level = "warn"
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	h := startHookjet(b, cfg, cli.Options{Log: slog.New(slog.NewTextHandler(tLogWriter{b}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	for i := range 10 {
		h.publish(fmt.Sprintf("t%d.order.created", i*9973), fmt.Sprintf("bench-%d", i), []byte(`{}`))
	}
	checkFor(b, 30*time.Second, 50*time.Millisecond, func() error {
		if got := len(h.dlq("")); got != 10 {
			return fmt.Errorf("%d dead letters of 10", got)
		}
		return nil
	})
	link := portalLink(b, h, map[string]any{"tenant": "tenant42"})
	base := "http://" + h.srv.AdminAddr()
	pages := []string{
		"/console/", "/console/?after=ep-050000", "/console/endpoints", "/console/endpoints?q=ep-0777",
		"/console/endpoints?tenant=tenant999", "/console/endpoints?attention=1",
		"/console/endpoints/ep-049860", "/console/events/bench-5", "/console/dlq",
		strings.TrimPrefix(link, base), strings.TrimPrefix(link, base) + "endpoints/ep-000042",
	}
	client := &http.Client{}
	b.Cleanup(client.CloseIdleConnections)
	// The console's first view waits for the first snapshot of the
	// endpoints that need attention (console/attention.go): measured
	// apart, once.
	resp, err := client.Get(base + "/console/")
	if err != nil {
		b.Fatal(err)
	}
	_ = resp.Body.Close()
	b.Logf("first view of the overview after start: %s server time (it waits at most 50 ms for the first attention snapshot, then says it is pending and reloads itself)", serverTiming(b, resp.Header.Get("Server-Timing")))
	for _, p := range pages {
		b.Run(strings.ReplaceAll(strings.TrimPrefix(p, "/"), "/", "_")[:min(40, len(p)-1)], func(b *testing.B) {
			var server, worst time.Duration
			for b.Loop() {
				resp, err := client.Get(base + p)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("%s: HTTP %d", p, resp.StatusCode)
				}
				d := serverTiming(b, resp.Header.Get("Server-Timing"))
				server += d
				worst = max(worst, d)
			}
			b.ReportMetric(float64(server.Microseconds())/1000/float64(b.N), "server-ms/op")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-server-ms")
		})
	}
}

// serverTiming reads "app;dur=<ms>".
func serverTiming(b *testing.B, h string) time.Duration {
	_, v, ok := strings.Cut(h, "dur=")
	ms, err := strconv.ParseFloat(v, 64)
	if !ok || err != nil {
		b.Fatalf("Server-Timing %q", h)
	}
	return time.Duration(ms * float64(time.Millisecond))
}

// BenchmarkPortalEndpointBusyDay renders a portal endpoint page whose
// endpoint had more attempts in the last 24 hours than the hourly chart
// reads (2 pages of 1,000 delivery-log records), against an endpoint with
// a few, and reports the server's own time per page as server-ms/op.
//
//	go test -run '^$' -bench PortalEndpointBusyDay -benchtime 20x ./test
func BenchmarkPortalEndpointBusyDay(b *testing.B) {
	const busy = 6000
	r := newReceiver(b, []string{secretA, secretB}, nil)
	cfg := testConfig(b, b.TempDir(), "",
		endpointYAML{ID: "busy", URL: r.URL, Events: []string{"order.*"}, Extra: "    tenant: acme\n"},
		endpointYAML{ID: "quiet", URL: r.URL, Events: []string{"invoice.*"}, Extra: "    tenant: acme\n"})
	cfg.Log.Level = "warn"
	h := startHookjet(b, cfg, cli.Options{Log: slog.New(slog.NewTextHandler(tLogWriter{b}, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	for i := range busy {
		h.publishFor("acme", "order.created", fmt.Sprintf("busy-%d", i), []byte(`{"n":1}`))
	}
	for i := range 10 {
		h.publishFor("acme", "invoice.paid", fmt.Sprintf("quiet-%d", i), []byte(`{"n":1}`))
	}
	checkFor(b, 120*time.Second, 100*time.Millisecond, func() error {
		if n := r.count(); n < busy+10 {
			return fmt.Errorf("%d of %d delivered", n, busy+10)
		}
		return nil
	})
	link := portalLink(b, h, map[string]any{"tenant": "acme"})
	client := &http.Client{}
	b.Cleanup(client.CloseIdleConnections)
	for _, id := range []string{"quiet", "busy"} {
		b.Run(id, func(b *testing.B) {
			var server, worst time.Duration
			for b.Loop() {
				resp, err := client.Get(link + "endpoints/" + id)
				if err != nil {
					b.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `class="chart volume"`) {
					b.Fatalf("%s: HTTP %d without the chart", id, resp.StatusCode)
				}
				if id == "busy" && !strings.Contains(string(body), "not counted") {
					b.Fatal("the busy endpoint's chart does not say what it did not count")
				}
				d := serverTiming(b, resp.Header.Get("Server-Timing"))
				server += d
				worst = max(worst, d)
			}
			b.ReportMetric(float64(server.Microseconds())/1000/float64(b.N), "server-ms/op")
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-server-ms")
		})
	}
}

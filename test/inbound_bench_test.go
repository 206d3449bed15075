package test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/dedupe"
	"github.com/hookjet/hookjet/inbound"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/state"
)

// benchGateway is the gateway's handler over a real JetStream (a
// standalone nats-server on loopback, file storage) with one github source.
func benchGateway(b *testing.B) (*inbound.Gateway, config.InboundSource) {
	b.Helper()
	ns := startNATSNode(b, "bench", standaloneNATS(b))
	nc, js := connectJS(b, ns.url())
	b.Cleanup(nc.Close)
	cfg := config.Default()
	cfg.Streams.MaxBytes = 1 << 30
	src := config.InboundSource{ID: "gh", Scheme: config.SchemeGitHub, Secrets: []config.Secret{config.NewSecret("bench-secret")}}
	cfg.Inbound.Sources = []config.InboundSource{src}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := jetstream.EnsureStreams(ctx, js, &cfg, nil); err != nil { // HOOKJET_SEEN
		b.Fatal(err)
	}
	if err := jetstream.EnsureInbound(ctx, js, &cfg, nil); err != nil {
		b.Fatal(err)
	}
	store := jetstream.OpenInboundStore(js, openSeenIDs(b, js, cfg.Dedupe.TTL), 0, nil)
	b.Cleanup(func() { _ = store.Flush(context.Background()) })
	g, err := inbound.New(cfg.Inbound, store, inbound.NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	return g, src
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }

// processCPU is the user and system CPU this process (the gateway and the
// in-process nats-server) has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchInbound serves one request per iteration straight to the handler
// (no network between client and gateway) and reports the process's CPU
// per request (cpu-µs/op: the gateway and nats-server, which runs in this
// process), the figure to compare: ns/op of an accepted request is mostly
// waiting for JetStream. With unique, each request is a new event signed
// with src (the signing, about 1 µs, is in the figure); without, the same
// request is sent every time.
func benchInbound(b *testing.B, g *inbound.Gateway, src config.InboundSource, want int, unique bool) {
	body := bytes.Repeat([]byte("x"), 500)
	target, _ := url.Parse("http://gateway/in/gh")
	h, _ := inbound.Sign(src, "d0", "push", body, time.Now())
	w := &discardWriter{h: http.Header{}}
	n := 0
	cpu0 := processCPU()
	for b.Loop() {
		if unique {
			n++
			h, _ = inbound.Sign(src, "d"+strconv.Itoa(n), "push", body, time.Now())
		}
		req := &http.Request{Method: http.MethodPost, URL: target, Header: h, Body: io.NopCloser(bytes.NewReader(body)),
			ContentLength: int64(len(body)), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
		clear(w.h)
		g.ServeHTTP(w, req.WithContext(context.Background()))
		if w.code != want {
			b.Fatalf("answer %d, want %d", w.code, want)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
}

// An accepted request: verified, looked up in the dedupe ledger, stored
// in HOOKJET_INBOUND, marked.
func BenchmarkInboundAccepted(b *testing.B) {
	g, src := benchGateway(b)
	b.ReportAllocs()
	benchInbound(b, g, src, http.StatusOK, true)
}

// A forged request: refused after the MAC, nothing stored. Compare its
// cpu-µs/op and allocs/op with BenchmarkInboundAccepted.
func BenchmarkInboundForged(b *testing.B) {
	g, src := benchGateway(b)
	src.Secrets = []config.Secret{config.NewSecret("forged")}
	b.ReportAllocs()
	benchInbound(b, g, src, http.StatusUnauthorized, false)
}

// openSeenIDs is a process's HOOKJET_SEEN over js with a dedupe ledger in a
// state file of its own, closed when tb ends.
func openSeenIDs(tb testing.TB, js natsjs.JetStream, ttl time.Duration) *jetstream.SeenIDs {
	tb.Helper()
	db, err := state.Open(filepath.Join(tb.TempDir(), "state.db"), 2*time.Second)
	if err != nil {
		tb.Fatal(err)
	}
	ledger, err := dedupe.NewLedger(db, ttl)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan struct{})
	go func() { defer close(ran); ledger.Run(ctx) }()
	seen, err := jetstream.OpenSeenIDs(js, ledger, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		seen.Close()
		cancel()
		<-ran
		_ = db.Close()
	})
	return seen
}

package test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/inbound"
	"github.com/hookjet/hookjet/jetstream"
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
	if err := jetstream.EnsureInbound(ctx, js, &cfg, nil); err != nil {
		b.Fatal(err)
	}
	store, err := jetstream.OpenInboundStore(ctx, js, 0, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = store.Flush(context.Background()) })
	g, err := inbound.New(cfg.Inbound, store, inbound.NewMetrics(prometheus.NewRegistry()))
	if err != nil {
		b.Fatal(err)
	}
	return g, src
}

// benchInbound serves one signed request per iteration straight to the
// handler (no network between client and gateway), signed with src.
func benchInbound(b *testing.B, g *inbound.Gateway, src config.InboundSource, want int) {
	body := bytes.Repeat([]byte("x"), 500)
	n := 0
	for b.Loop() {
		n++
		id := "d" + strconv.Itoa(n)
		h, _ := inbound.Sign(src, id, "push", body, time.Now())
		req := httptest.NewRequest(http.MethodPost, "/in/gh", bytes.NewReader(body))
		req.Header = h
		w := httptest.NewRecorder()
		g.ServeHTTP(w, req)
		if w.Code != want {
			b.Fatalf("answer %d %s, want %d", w.Code, w.Body, want)
		}
	}
}

// An accepted request: verified, stored in HOOKJET_INBOUND after a lookup
// in HOOKJET_INBOUND_SEEN, marked.
func BenchmarkInboundAccepted(b *testing.B) {
	g, src := benchGateway(b)
	b.ReportAllocs()
	benchInbound(b, g, src, http.StatusOK)
}

// A forged request: refused after the MAC, nothing stored. Compare its
// ns/op and allocs/op with BenchmarkInboundAccepted (the signing and the
// request's construction are in both).
func BenchmarkInboundForged(b *testing.B) {
	g, src := benchGateway(b)
	src.Secrets = []config.Secret{config.NewSecret("forged")}
	b.ReportAllocs()
	benchInbound(b, g, src, http.StatusUnauthorized)
}

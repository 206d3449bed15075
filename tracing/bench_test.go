package tracing_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hookjet/hookjet/deliver"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/tracing"
)

var deliverOK = destination.Result{Class: destination.Success, Status: 204}

// benchTracers are the two cases every benchmark runs: tracing off (the nil
// Tracer the engine holds by default) and on, sampling every span into a
// batcher over a discarding exporter, as a production provider would.
func benchTracers(b *testing.B) []struct {
	name string
	tr   *tracing.Tracer
} {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return []struct {
		name string
		tr   *tracing.Tracer
	}{{"off", nil}, {"on", tracing.New(tp)}}
}

// BenchmarkAttempt measures what tracing adds to one delivery attempt:
// extracting the publisher's traceparent, starting the span, building the
// request's trace headers and ending the span.
func BenchmarkAttempt(b *testing.B) {
	h := tracing.Header{"traceparent": {traceparent}, "Nats-Msg-Id": {"evt_1"}}
	for _, c := range benchTracers(b) {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				sp := c.tr.StartAttempt(ctx, h, tracing.Attempt{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Number: 1})
				_ = sp.Header()
				sp.EndAttempt(&deliverOK)
			}
		})
	}
}

// BenchmarkDelivery is one signed delivery over keep-alive loopback HTTP
// through its destination, with the tracing calls the engine makes around
// it, off and on.
func BenchmarkDelivery(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	c := deliver.NewClient(deliver.ClientOptions{Guard: deliver.NewGuard(true, nil)})
	b.Cleanup(c.CloseIdleConnections)
	h := tracing.Header{"traceparent": {traceparent}, "Nats-Msg-Id": {"evt_1"}}
	dest := c.Open(destination.Endpoint{
		URL:    srv.URL + "/hooks",
		Signer: deliver.NewSigner([]byte("0123456789abcdef0123456789abcdef")),
	})
	body := bytes.Repeat([]byte("x"), 500)
	for _, tc := range benchTracers(b) {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				sp := tc.tr.StartAttempt(ctx, h, tracing.Attempt{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Number: 1})
				res := dest.Send(ctx, destination.Request{EventID: "evt_1", Payload: body, Trace: sp.Header()})
				sp.EndAttempt(&res)
				if res.Class != destination.Success {
					b.Fatalf("Send = %+v", res)
				}
			}
		})
	}
}

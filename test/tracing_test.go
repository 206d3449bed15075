package test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/tracing"
)

const (
	pubTrace    = "4bf92f3577b34da6a3ce929d0e0e4736"
	pubSpan     = "00f067aa0ba902b7"
	pubTraceCtx = "00-" + pubTrace + "-" + pubSpan + "-01"
)

// startTraced starts hookjet with an SDK tracer provider whose spans reach
// the returned in-memory exporter as they end.
func startTraced(t *testing.T, eps ...endpointYAML) (*hookjet, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) }) // after hookjet's own cleanup
	h := startHookjet(t, testConfig(t, t.TempDir(), "", eps...), cli.Options{TracerProvider: tp})
	return h, exp
}

// publishTraced publishes an event whose headers carry the publisher's
// traceparent, as an OpenTelemetry-instrumented producer's would.
func (h *hookjet) publishTraced(typ, id string, body []byte) {
	h.t.Helper()
	m := nats.NewMsg("hookjet.events." + typ)
	m.Data = body
	m.Header.Set("Nats-Msg-Id", id)
	m.Header.Set("traceparent", pubTraceCtx)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := h.js.PublishMsg(ctx, m); err != nil {
		h.t.Fatalf("publish: %v", err)
	}
}

func spanAttrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

// spansNamed waits until exp holds n spans named name and returns them.
func spansNamed(t *testing.T, exp *tracetest.InMemoryExporter, name string, n int) []tracetest.SpanStub {
	t.Helper()
	var out []tracetest.SpanStub
	checkFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		out = out[:0]
		for _, s := range exp.GetSpans() {
			if s.Name == name {
				out = append(out, s)
			}
		}
		if len(out) != n {
			return fmt.Errorf("%d %s spans, want %d", len(out), name, n)
		}
		return nil
	})
	return out
}

// TestTracingAttemptsAreSiblingsUnderThePublisher: an event published with
// a traceparent and answered 503, 503, 200 makes three attempt spans, all
// children of the publisher's span, numbered 1..3 with their statuses and
// classes; each request carried the traceparent of its own attempt span.
func TestTracingAttemptsAreSiblingsUnderThePublisher(t *testing.T) {
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		if d.Attempt < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	h, exp := startTraced(t, endpointYAML{ID: "crm", URL: r.URL})
	h.publishTraced("order.created", "evt_traced", []byte(`{"order":1}`))

	spans := spansNamed(t, exp, tracing.SpanAttempt, 3)
	got := r.deliveries()
	if len(got) != 3 {
		t.Fatalf("receiver got %d requests, want 3", len(got))
	}
	wantStatus := []int64{503, 503, 200}
	wantClass := []string{"transient", "transient", "success"}
	for i, s := range spans {
		a := spanAttrs(s)
		if s.Parent.TraceID().String() != pubTrace || s.Parent.SpanID().String() != pubSpan {
			t.Errorf("attempt %d: parent %s/%s, want the publisher's %s/%s", i+1, s.Parent.TraceID(), s.Parent.SpanID(), pubTrace, pubSpan)
		}
		if n := a[tracing.AttrAttempt].AsInt64(); n != int64(i+1) {
			t.Errorf("span %d: attempt %d", i, n)
		}
		if st, cl := a[tracing.AttrHTTPStatus].AsInt64(), a[tracing.AttrClass].AsString(); st != wantStatus[i] || cl != wantClass[i] {
			t.Errorf("attempt %d: status %d class %s, want %d %s", i+1, st, cl, wantStatus[i], wantClass[i])
		}
		if a[tracing.AttrEndpoint].AsString() != "crm" || a[tracing.AttrEventID].AsString() != "evt_traced" || a[tracing.AttrEventType].AsString() != "order.created" {
			t.Errorf("attempt %d: attributes %v", i+1, s.Attributes)
		}
		// The receiver saw this attempt's span as its parent.
		want := "00-" + pubTrace + "-" + s.SpanContext.SpanID().String() + "-01"
		if tp := got[i].Header.Get("traceparent"); tp != want {
			t.Errorf("request %d: traceparent %q, want %q (attempt span)", i+1, tp, want)
		}
	}
	if spans[0].SpanContext.SpanID() == spans[1].SpanContext.SpanID() {
		t.Error("retries share a span")
	}
}

// TestTracingDeadLetterAndReplay: a rejected event's dead-letter span is a
// child of the publisher's span; replaying it makes a replay span under the
// dead letter, and the replay's attempt (accepted) sits under the replay, so
// the whole story is one trace.
func TestTracingDeadLetterAndReplay(t *testing.T) {
	accept := make(chan struct{})
	r := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		select {
		case <-accept:
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusBadRequest)
		}
	})
	h, exp := startTraced(t, endpointYAML{ID: "picky", URL: r.URL})
	h.publishTraced("order.created", "evt_dl", []byte(`{"v":1}`))

	dl := spansNamed(t, exp, tracing.SpanDeadLetter, 1)[0]
	if dl.Parent.SpanID().String() != pubSpan || dl.SpanContext.TraceID().String() != pubTrace {
		t.Errorf("dead letter span parent %s in trace %s", dl.Parent.SpanID(), dl.SpanContext.TraceID())
	}
	if a := spanAttrs(dl); a[tracing.AttrReason].AsString() != "permanent" || a[tracing.AttrAttempts].AsInt64() != 1 {
		t.Errorf("dead letter attributes %v", dl.Attributes)
	}
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := len(h.dlq("")); n != 1 {
			return fmt.Errorf("%d dead letters", n)
		}
		return nil
	})
	close(accept)
	var res struct {
		Replayed int `json:"replayed"`
	}
	if code := h.api("POST", "/api/v1/dlq/replay", "", map[string]any{"ids": []string{"evt_dl"}}, &res); code != 200 || res.Replayed != 1 {
		t.Fatalf("replay: HTTP %d %+v", code, res)
	}
	rp := spansNamed(t, exp, tracing.SpanReplay, 1)[0]
	if rp.Parent.SpanID() != dl.SpanContext.SpanID() || rp.SpanContext.TraceID().String() != pubTrace {
		t.Errorf("replay span parent %s, want the dead letter's %s", rp.Parent.SpanID(), dl.SpanContext.SpanID())
	}
	attempts := spansNamed(t, exp, tracing.SpanAttempt, 2)
	last := attempts[1]
	if a := spanAttrs(last); last.Parent.SpanID() != rp.SpanContext.SpanID() || !a[tracing.AttrReplay].AsBool() ||
		a[tracing.AttrAttempt].AsInt64() != 1 || a[tracing.AttrClass].AsString() != "success" {
		t.Errorf("replayed attempt: parent %s (want replay %s), attributes %v", last.Parent.SpanID(), rp.SpanContext.SpanID(), last.Attributes)
	}
	if got := r.deliveries(); len(got) != 2 || !strings.Contains(got[1].Header.Get("traceparent"), last.SpanContext.SpanID().String()) {
		t.Errorf("replayed request traceparent: %+v", got)
	}
}

package tracing_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/tracing"
)

const (
	parentTrace = "0af7651916cd43dd8448eb211c80319c"
	parentSpan  = "b7ad6b7169203331"
	traceparent = "00-" + parentTrace + "-" + parentSpan + "-01"
)

// newTracer returns a Tracer whose spans end up in the returned exporter as
// soon as they end.
func newTracer(t testing.TB) (*tracing.Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tracing.New(tp), exp
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value
	}
	return m
}

func only(t *testing.T, exp *tracetest.InMemoryExporter) tracetest.SpanStub {
	t.Helper()
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1: %+v", len(spans), spans)
	}
	return spans[0]
}

func TestAttemptSpan(t *testing.T) {
	for _, tt := range []struct {
		name      string
		header    tracing.Header
		res       destination.Result
		wantTrace string // "" : a new trace
		status    codes.Code
	}{
		{"lower-case traceparent, success", tracing.Header{"traceparent": {traceparent}},
			destination.Result{Class: destination.Success, Status: 204}, parentTrace, codes.Unset},
		{"canonical Traceparent, transient", tracing.Header{"Traceparent": {traceparent}, "Nats-Msg-Id": {"x"}},
			destination.Result{Class: destination.Transient, Status: 503, Reason: "HTTP 503 Service Unavailable"}, parentTrace, codes.Error},
		{"no traceparent, connection refused", tracing.Header{"Nats-Msg-Id": {"x"}},
			destination.Result{Class: destination.Transient, Err: errors.New("connection refused"), Reason: "connection refused"}, "", codes.Error},
		{"nil header", nil,
			destination.Result{Class: destination.Permanent, Status: 400, Reason: "HTTP 400 Bad Request"}, "", codes.Error},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tr, exp := newTracer(t)
			sp := tr.StartAttempt(context.Background(), tt.header, tracing.Attempt{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Number: 3})
			h := sp.Header()
			sp.EndAttempt(&tt.res)
			s := only(t, exp)
			if s.Name != tracing.SpanAttempt || s.SpanKind != trace.SpanKindClient {
				t.Errorf("span %q kind %v", s.Name, s.SpanKind)
			}
			if tt.wantTrace != "" {
				if got := s.Parent.TraceID().String(); got != tt.wantTrace || s.Parent.SpanID().String() != parentSpan || !s.Parent.IsRemote() {
					t.Errorf("parent = %s/%s remote=%v, want %s/%s remote", got, s.Parent.SpanID(), s.Parent.IsRemote(), tt.wantTrace, parentSpan)
				}
			} else if s.Parent.IsValid() {
				t.Errorf("parent = %v, want none", s.Parent)
			}
			a := attrs(s)
			want := map[attribute.Key]any{
				tracing.AttrEndpoint: "crm", tracing.AttrEventType: "order.created", tracing.AttrEventID: "evt_1",
				tracing.AttrAttempt: int64(3), tracing.AttrReplay: false, tracing.AttrClass: tt.res.Class.String(),
			}
			if tt.res.Status != 0 {
				want[tracing.AttrHTTPStatus] = int64(tt.res.Status)
			} else if _, ok := a[tracing.AttrHTTPStatus]; ok {
				t.Errorf("status attribute without a response: %v", a[tracing.AttrHTTPStatus])
			}
			for k, v := range want {
				if got := a[k].AsInterface(); got != v {
					t.Errorf("attribute %s = %v, want %v", k, got, v)
				}
			}
			if s.Status.Code != tt.status {
				t.Errorf("status = %v %q, want %v", s.Status.Code, s.Status.Description, tt.status)
			}
			if want := tt.res.Class.String() + ": " + tt.res.Reason; tt.status == codes.Error && s.Status.Description != want {
				t.Errorf("status description = %q, want %q", s.Status.Description, want)
			}
			// The request carries the attempt span, not the publisher's.
			want2 := "00-" + s.SpanContext.TraceID().String() + "-" + s.SpanContext.SpanID().String() + "-01"
			if got := h.Get("traceparent"); got != want2 {
				t.Errorf("request traceparent = %q, want %q", got, want2)
			}
		})
	}
}

// TestDeadLetterReplayChain follows the trace context from a message through
// its dead letter and its replay to the replay's first attempt.
func TestDeadLetterReplayChain(t *testing.T) {
	tr, exp := newTracer(t)
	ctx := context.Background()
	msg := tracing.Header{"Traceparent": {traceparent}}

	dl := tr.StartDeadLetter(ctx, msg, tracing.DeadLetter{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Reason: "exhausted", Attempts: 2})
	dlqMsg := tracing.Header{"Hookjet-Reason": {"exhausted"}}
	dl.Inject(dlqMsg)
	dl.End(nil)

	rp := tr.StartReplay(ctx, dlqMsg, tracing.Replay{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Seq: 7})
	replayMsg := tracing.Header{}
	rp.Inject(replayMsg)
	rp.End(errors.New("publish failed"))

	at := tr.StartAttempt(ctx, replayMsg, tracing.Attempt{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Number: 1, Replay: true})
	at.EndAttempt(&destination.Result{Class: destination.Success, Status: 200})

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3", len(spans))
	}
	d, r, a := spans[0], spans[1], spans[2]
	if d.Name != tracing.SpanDeadLetter || r.Name != tracing.SpanReplay || a.Name != tracing.SpanAttempt {
		t.Fatalf("spans %q %q %q", d.Name, r.Name, a.Name)
	}
	for _, s := range spans {
		if s.SpanContext.TraceID().String() != parentTrace {
			t.Errorf("%s left the trace: %s", s.Name, s.SpanContext.TraceID())
		}
	}
	if d.Parent.SpanID().String() != parentSpan || r.Parent.SpanID() != d.SpanContext.SpanID() || a.Parent.SpanID() != r.SpanContext.SpanID() {
		t.Errorf("chain broken: dead letter parent %s, replay parent %s (dl %s), attempt parent %s (replay %s)",
			d.Parent.SpanID(), r.Parent.SpanID(), d.SpanContext.SpanID(), a.Parent.SpanID(), r.SpanContext.SpanID())
	}
	if got := attrs(d)[tracing.AttrReason].AsString(); got != "exhausted" {
		t.Errorf("dead letter reason = %q", got)
	}
	if got := attrs(r)[tracing.AttrDLQSeq].AsInt64(); got != 7 {
		t.Errorf("replay seq = %d", got)
	}
	if r.Status.Code != codes.Error || r.Status.Description != "publish failed" {
		t.Errorf("replay status = %+v", r.Status)
	}
	if !attrs(a)[tracing.AttrReplay].AsBool() {
		t.Error("replay attempt lacks hookjet.replay=true")
	}
	if _, ok := dlqMsg["traceparent"]; !ok || len(dlqMsg) != 2 {
		t.Errorf("dead letter headers = %v, want Hookjet-Reason and traceparent", dlqMsg)
	}
}

// TestNilTracerIsFree proves the untraced path: every call on a nil *Tracer
// and its zero Span returns without allocating.
func TestNilTracerAllocsNothing(t *testing.T) {
	var tr *tracing.Tracer
	h := tracing.Header{"traceparent": {traceparent}}
	res := &destination.Result{Class: destination.Transient, Status: 503, Reason: "HTTP 503 Service Unavailable"}
	ctx := context.Background()
	n := testing.AllocsPerRun(1000, func() {
		sp := tr.StartAttempt(ctx, h, tracing.Attempt{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Number: 1})
		if sp.Header() != nil {
			t.Fatal("nil tracer returned trace headers")
		}
		sp.EndAttempt(res)
		dl := tr.StartDeadLetter(ctx, h, tracing.DeadLetter{Endpoint: "crm", Reason: "exhausted"})
		dl.Inject(h)
		dl.End(nil)
		tr.StartReplay(ctx, h, tracing.Replay{Endpoint: "crm"}).End(nil)
	})
	if n != 0 {
		t.Errorf("tracing off allocates %v times per attempt, want 0", n)
	}
	if len(h) != 1 {
		t.Errorf("nil tracer changed the headers: %v", h)
	}
	if tracing.New(nil) != nil {
		t.Error("New(nil) is not the nil (off) Tracer")
	}
}

func TestHeader(t *testing.T) {
	h := tracing.Header{"Traceparent": {"a"}, "X": {}}
	if got := h.Get("traceparent"); got != "a" {
		t.Errorf("Get ignoring case = %q", got)
	}
	if got := h.Get("x"); got != "" {
		t.Errorf("Get of an empty value list = %q", got)
	}
	h.Set("traceparent", "b")
	if _, ok := h["Traceparent"]; ok || h.Get("traceparent") != "b" {
		t.Errorf("Set left another spelling: %v", h)
	}
	if len(h.Keys()) != 2 {
		t.Errorf("Keys = %v", h.Keys())
	}
	// nats.Header and http.Header convert; the W3C propagator reads both.
	var hh = http.Header{}
	hh.Set("Traceparent", traceparent)
	ctx := propagation.TraceContext{}.Extract(context.Background(), tracing.Header(hh))
	if sc := trace.SpanContextFromContext(ctx); sc.TraceID().String() != parentTrace {
		t.Errorf("extracted %v", sc)
	}
}

package tracing

import (
	"context"
	"net/http"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookjet/hookjet/destination"
)

// ScopeName is the instrumentation scope of hookjet's spans.
const ScopeName = "github.com/hookjet/hookjet"

// Span names.
const (
	SpanAttempt    = "hookjet.attempt"
	SpanDeadLetter = "hookjet.dead_letter"
	SpanReplay     = "hookjet.replay"
)

// Attribute keys of hookjet's spans.
const (
	AttrEndpoint   = attribute.Key("hookjet.endpoint")
	AttrEventType  = attribute.Key("hookjet.event.type")
	AttrEventID    = attribute.Key("hookjet.event.id")
	AttrAttempt    = attribute.Key("hookjet.attempt")
	AttrAttempts   = attribute.Key("hookjet.attempts")
	AttrReplay     = attribute.Key("hookjet.replay")
	AttrClass      = attribute.Key("hookjet.class")
	AttrReason     = attribute.Key("hookjet.reason")
	AttrDLQSeq     = attribute.Key("hookjet.dlq.seq")
	AttrHTTPStatus = attribute.Key("http.response.status_code")
)

// Tracer starts hookjet's spans. A nil *Tracer is valid: tracing is off, and
// every method returns a no-op [Span] without allocating.
type Tracer struct {
	tracer trace.Tracer
	prop   propagation.TraceContext
}

// New returns a Tracer that starts spans from tp, or nil (tracing off) when
// tp is nil.
func New(tp trace.TracerProvider) *Tracer {
	if tp == nil {
		return nil
	}
	return &Tracer{tracer: tp.Tracer(ScopeName)}
}

// Header is a header map in which W3C trace context travels: nats.Header
// and http.Header both convert to it (tracing.Header(msg.Header)) without a
// copy. Lookups ignore case, since NATS headers are case-sensitive and
// publishers write "traceparent" as well as "Traceparent"; Set writes the
// key as given (the W3C lower case).
type Header map[string][]string

// Get returns the first value of key, matched exactly first and then
// ignoring case; "" when there is none.
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, key) {
			return v[0]
		}
	}
	return ""
}

// Set replaces the values of key (and of any spelling of it in another case)
// with value.
func (h Header) Set(key, value string) {
	for k := range h {
		if k != key && strings.EqualFold(k, key) {
			delete(h, k)
		}
	}
	h[key] = []string{value}
}

// Keys lists the keys of h.
func (h Header) Keys() []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	return keys
}

// Attempt describes one delivery attempt.
type Attempt struct {
	Endpoint  string
	EventType string
	EventID   string
	// Number is the attempt's number, 1 for the first (and for the first
	// attempt of a replay).
	Number int
	// Replay is true for a replayed dead letter.
	Replay bool
}

// DeadLetter describes a move to the dead-letter stream.
type DeadLetter struct {
	Endpoint  string
	EventType string
	EventID   string
	Reason    string
	Attempts  int
}

// Replay describes a dead letter sent again.
type Replay struct {
	Endpoint  string
	EventType string
	EventID   string
	// Seq is the dead letter's sequence in HOOKJET_DLQ.
	Seq uint64
}

// Span is a started span. The zero Span, which a nil *Tracer returns, does
// nothing.
type Span struct {
	s trace.Span
}

// parent returns ctx with the remote span context found in h, if any.
func (t *Tracer) parent(ctx context.Context, h Header) context.Context {
	if ctx == nil {
		ctx = context.Background()
	}
	if len(h) == 0 {
		return ctx
	}
	return t.prop.Extract(ctx, h)
}

// start starts a span named name, a child of the trace context in h.
func (t *Tracer) start(ctx context.Context, h Header, name string, kind trace.SpanKind, attrs ...attribute.KeyValue) Span {
	_, s := t.tracer.Start(t.parent(ctx, h), name, trace.WithSpanKind(kind), trace.WithAttributes(attrs...))
	return Span{s: s}
}

// StartAttempt starts the span of one delivery attempt, a child of the
// trace context in the message headers h (nil: a new trace). Call
// [Span.Header] for the request's trace headers and [Span.EndAttempt] with
// the result.
func (t *Tracer) StartAttempt(ctx context.Context, h Header, a Attempt) Span {
	if t == nil {
		return Span{}
	}
	return t.start(ctx, h, SpanAttempt, trace.SpanKindClient,
		AttrEndpoint.String(a.Endpoint),
		AttrEventType.String(a.EventType),
		AttrEventID.String(a.EventID),
		AttrAttempt.Int(a.Number),
		AttrReplay.Bool(a.Replay),
		attribute.String("http.request.method", http.MethodPost))
}

// StartDeadLetter starts the span of a move to the dead-letter stream, a
// child of the trace context in the original message's headers h. Call
// [Span.Inject] on the dead letter's headers so that a replay continues the
// trace, then [Span.End].
func (t *Tracer) StartDeadLetter(ctx context.Context, h Header, d DeadLetter) Span {
	if t == nil {
		return Span{}
	}
	return t.start(ctx, h, SpanDeadLetter, trace.SpanKindProducer,
		AttrEndpoint.String(d.Endpoint),
		AttrEventType.String(d.EventType),
		AttrEventID.String(d.EventID),
		AttrReason.String(d.Reason),
		AttrAttempts.Int(d.Attempts))
}

// StartReplay starts the span of a replay, a child of the trace context in
// the dead letter's headers h. Call [Span.Inject] on the replayed message's
// headers, so that its attempts are children of the replay, then [Span.End].
func (t *Tracer) StartReplay(ctx context.Context, h Header, r Replay) Span {
	if t == nil {
		return Span{}
	}
	return t.start(ctx, h, SpanReplay, trace.SpanKindProducer,
		AttrEndpoint.String(r.Endpoint),
		AttrEventType.String(r.EventType),
		AttrEventID.String(r.EventID),
		AttrDLQSeq.Int64(int64(r.Seq)))
}

// Header returns the W3C trace headers (Traceparent, Tracestate) that
// continue this span in an HTTP request, or nil for the zero Span.
func (s Span) Header() http.Header {
	if s.s == nil {
		return nil
	}
	h := make(http.Header, 2)
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(context.Background(), s.s), propagation.HeaderCarrier(h))
	return h
}

// Inject writes this span's W3C trace context into h (a NATS message's
// headers) as "traceparent" and "tracestate". The zero Span writes nothing.
func (s Span) Inject(h Header) {
	if s.s == nil || h == nil {
		return
	}
	propagation.TraceContext{}.Inject(trace.ContextWithSpan(context.Background(), s.s), h)
}

// EndAttempt records an attempt's result on its span and ends it: the HTTP
// status (when there was a response) and the class, with status Error and
// the outcome's reason unless the attempt succeeded.
func (s Span) EndAttempt(res *destination.Result) {
	if s.s == nil {
		return
	}
	if res.Status != 0 {
		s.s.SetAttributes(AttrHTTPStatus.Int(res.Status))
	}
	s.s.SetAttributes(AttrClass.String(res.Class.String()))
	if res.Class != destination.Success {
		s.s.SetStatus(codes.Error, res.Class.String()+": "+res.Reason)
	}
	s.s.End()
}

// End ends the span, with status Error and err's message when err is not nil.
func (s Span) End(err error) {
	if s.s == nil {
		return
	}
	if err != nil {
		s.s.RecordError(err)
		s.s.SetStatus(codes.Error, err.Error())
	}
	s.s.End()
}

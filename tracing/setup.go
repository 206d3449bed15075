package tracing

import (
	"context"
	"fmt"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkresource "go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/hookjet/hookjet/config"
)

// The OTLP protocols Setup exports with.
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// DefaultServiceName is the service.name of hookjet's spans when neither
// OTEL_SERVICE_NAME nor tracing.service_name says otherwise.
const DefaultServiceName = "hookjet"

// Export is what Setup decided from the configuration and the environment.
type Export struct {
	// Enabled is true when spans are exported.
	Enabled bool
	// Protocol is ProtocolHTTP or ProtocolGRPC.
	Protocol string
	// Endpoint is the OTLP endpoint URL given by the environment; empty
	// means the exporter's default (or, for settings Setup does not read
	// itself, the process environment: see Setup).
	Endpoint string
	// ServiceName is the service.name resource attribute.
	ServiceName string
}

// Decide reads what Setup does from cfg and the OTEL_* variables getenv
// returns (nil: none). Tracing is on when tracing.enabled is true or
// OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set,
// unless OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is "none". Any
// other OTEL_TRACES_EXPORTER than "otlp" (the default) and any protocol
// other than http/protobuf (the default) and grpc is an error.
func Decide(cfg config.Tracing, getenv func(string) string) (Export, error) {
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	env := func(k string) string { return strings.TrimSpace(getenv(k)) }
	e := Export{Protocol: ProtocolHTTP, ServiceName: DefaultServiceName}
	if v := env("OTEL_SERVICE_NAME"); v != "" {
		e.ServiceName = v
	} else if cfg.ServiceName != "" {
		e.ServiceName = cfg.ServiceName
	}
	if strings.EqualFold(env("OTEL_SDK_DISABLED"), "true") {
		return e, nil
	}
	switch x := env("OTEL_TRACES_EXPORTER"); x {
	case "", "otlp":
	case "none":
		return e, nil
	default:
		return e, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: hookjet exports with otlp only (or none)", x)
	}
	protoVar := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	p := env(protoVar)
	if p == "" {
		protoVar = "OTEL_EXPORTER_OTLP_PROTOCOL"
		p = env(protoVar)
	}
	switch p {
	case "", ProtocolHTTP:
	case ProtocolGRPC:
		e.Protocol = ProtocolGRPC
	default:
		return e, fmt.Errorf("%s=%q: %w (use %s or %s)", protoVar, p, ErrProtocol, ProtocolHTTP, ProtocolGRPC)
	}
	if v := env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		e.Endpoint = v
	} else if v := env("OTEL_EXPORTER_OTLP_ENDPOINT"); v != "" {
		e.Endpoint = v
		if e.Protocol == ProtocolHTTP {
			// The signal-independent endpoint is a base URL for HTTP.
			e.Endpoint = strings.TrimSuffix(v, "/") + "/v1/traces"
		}
	}
	e.Enabled = cfg.Enabled || e.Endpoint != ""
	return e, nil
}

// Setup returns the tracer provider cfg and the OTEL_* variables getenv
// returns ask for, as [Decide] documents, with the shutdown function that
// flushes and stops it; or, with tracing off, a nil provider (which [New]
// turns into a nil, free *Tracer) and a shutdown that does nothing.
//
// Setup reads the switch, the protocol, the endpoint and the service name
// through getenv. The exporter's other settings (OTEL_EXPORTER_OTLP_HEADERS,
// _TIMEOUT, _COMPRESSION, _CERTIFICATE and their _TRACES_ variants), the
// sampler (OTEL_TRACES_SAMPLER, default parentbased_always_on) and
// OTEL_RESOURCE_ATTRIBUTES are read by the OpenTelemetry SDK from the process
// environment. Spans are batched; shutdown exports what is left.
func Setup(ctx context.Context, cfg config.Tracing, getenv func(string) string) (trace.TracerProvider, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	e, err := Decide(cfg, getenv)
	if err != nil || !e.Enabled {
		return nil, none, err
	}
	var exp sdktrace.SpanExporter
	if e.Protocol == ProtocolGRPC {
		var opts []otlptracegrpc.Option
		if e.Endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(e.Endpoint))
		}
		exp, err = otlptracegrpc.New(ctx, opts...)
	} else {
		var opts []otlptracehttp.Option
		if e.Endpoint != "" {
			opts = append(opts, otlptracehttp.WithEndpointURL(e.Endpoint))
		}
		exp, err = otlptracehttp.New(ctx, opts...)
	}
	if err != nil {
		return nil, none, fmt.Errorf("otlp exporter: %w", err)
	}
	res, err := sdkresource.Merge(sdkresource.Default(),
		sdkresource.NewSchemaless(attribute.String("service.name", e.ServiceName)))
	if err != nil {
		return nil, none, fmt.Errorf("tracing resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, tp.Shutdown, nil
}

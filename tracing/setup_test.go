package tracing_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/tracing"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestDecide(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cfg     config.Tracing
		getenv  func(string) string
		want    tracing.Export
		wantErr error
	}{
		{"off by default", config.Tracing{}, nil,
			tracing.Export{Protocol: "http/protobuf", ServiceName: "hookjet"}, nil},
		{"config switch, exporter default endpoint", config.Tracing{Enabled: true, ServiceName: "hooks"}, nil,
			tracing.Export{Enabled: true, Protocol: "http/protobuf", ServiceName: "hooks"}, nil},
		{"OTLP endpoint turns it on and gets the traces path", config.Tracing{},
			env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/", "OTEL_SERVICE_NAME", "shop-hooks"),
			tracing.Export{Enabled: true, Protocol: "http/protobuf", Endpoint: "http://collector:4318/v1/traces", ServiceName: "shop-hooks"}, nil},
		{"traces endpoint is used as it is", config.Tracing{},
			env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:4318/custom"),
			tracing.Export{Enabled: true, Protocol: "http/protobuf", Endpoint: "http://b:4318/custom", ServiceName: "hookjet"}, nil},
		{"grpc endpoint keeps its path", config.Tracing{},
			env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
			tracing.Export{Enabled: true, Protocol: "grpc", Endpoint: "http://collector:4317", ServiceName: "hookjet"}, nil},
		{"SDK disabled wins over both switches", config.Tracing{Enabled: true},
			env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318", "OTEL_SDK_DISABLED", "TRUE"),
			tracing.Export{Protocol: "http/protobuf", ServiceName: "hookjet"}, nil},
		{"traces exporter none", config.Tracing{Enabled: true}, env("OTEL_TRACES_EXPORTER", "none"),
			tracing.Export{Protocol: "http/protobuf", ServiceName: "hookjet"}, nil},
		{"http/json is refused, naming the variable", config.Tracing{Enabled: true}, env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
			tracing.Export{}, tracing.ErrProtocol},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tracing.Decide(tt.cfg, tt.getenv)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("Decide = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
	if _, err := tracing.Decide(config.Tracing{}, env("OTEL_TRACES_EXPORTER", "zipkin")); err == nil {
		t.Error("OTEL_TRACES_EXPORTER=zipkin accepted")
	}
}

func TestSetupOff(t *testing.T) {
	tp, shutdown, err := tracing.Setup(context.Background(), config.Tracing{}, env("OTEL_SERVICE_NAME", "x"))
	if err != nil || tp != nil {
		t.Fatalf("Setup = %v, %v; want no provider", tp, err)
	}
	if tracing.New(tp) != nil {
		t.Error("tracing off did not give the nil Tracer")
	}
	if err := shutdown(context.Background()); err != nil {
		t.Error(err)
	}
}

// TestSetupExportsOTLP runs Setup against an OTLP/HTTP collector made of an
// httptest server and decodes what it receives.
func TestSetupExportsOTLP(t *testing.T) {
	var mu sync.Mutex
	var got []*coltrace.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" || err != nil {
			t.Errorf("collector got %s %s (%s), %v", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		req := &coltrace.ExportTraceServiceRequest{}
		if err := proto.Unmarshal(body, req); err != nil {
			t.Errorf("decode: %v", err)
		}
		mu.Lock()
		got = append(got, req)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()

	ctx := context.Background()
	tp, shutdown, err := tracing.Setup(ctx, config.Tracing{ServiceName: "from-config"},
		env("OTEL_EXPORTER_OTLP_ENDPOINT", srv.URL, "OTEL_SERVICE_NAME", "shop-hooks"))
	if err != nil || tp == nil {
		t.Fatalf("Setup = %v, %v", tp, err)
	}
	tr := tracing.New(tp)
	sp := tr.StartAttempt(ctx, tracing.Header{"traceparent": {traceparent}}, tracing.Attempt{Endpoint: "crm", EventType: "order.created", EventID: "evt_1", Number: 1})
	sp.EndAttempt(&deliverOK)
	if err := shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	var names []string
	service := ""
	for _, req := range got {
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.Resource.Attributes {
				if kv.Key == "service.name" {
					service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
	}
	if len(names) != 1 || names[0] != tracing.SpanAttempt || service != "shop-hooks" {
		t.Errorf("collector received spans %v from service %q, want [%s] from shop-hooks", names, service, tracing.SpanAttempt)
	}
}

package config

// Tracing configures OpenTelemetry traces of deliveries. The standard OTEL_*
// environment variables turn tracing on as well (OTEL_EXPORTER_OTLP_ENDPOINT)
// or off (OTEL_SDK_DISABLED=true, OTEL_TRACES_EXPORTER=none) and configure
// the OTLP exporter; see package tracing.
type Tracing struct {
	// Enabled exports a span per delivery attempt, dead letter and replay
	// over OTLP even without OTEL_EXPORTER_OTLP_ENDPOINT (the exporter then
	// sends to the OTLP default, http://localhost:4318). Default false:
	// tracing is off and costs nothing.
	Enabled bool `yaml:"enabled"`
	// ServiceName is the service.name resource attribute; OTEL_SERVICE_NAME
	// overrides it. Empty means "hookjet".
	ServiceName string `yaml:"service_name"`
}

package tracing

import "errors"

// ErrProtocol means OTEL_EXPORTER_OTLP_PROTOCOL (or its traces variant) names
// a protocol hookjet does not export with: only "http/protobuf" (the
// default) and "grpc" are supported.
var ErrProtocol = errors.New("unsupported OTLP protocol")

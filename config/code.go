package config

import (
	"time"

	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/transform"
)

// maxTransformTimeout bounds transform_timeout.
const maxTransformTimeout = 10 * time.Second

// CheckCode compiles an endpoint's filter and transform as the engine will,
// returning a [*FieldError] for "filter" and one for "transform" for each
// that does not compile (its message has the line:column), or nil. The
// filter's cost is estimated with payloads up to security.max_payload_bytes.
// Endpoints are checked with it where they are defined (the file, the admin
// API, the portal), not each time a stored definition is read.
func (s Security) CheckCode(ep Endpoint) []*FieldError {
	var out []*FieldError
	if ep.Filter != "" {
		if _, err := s.CompileFilter(ep.Filter); err != nil {
			out = append(out, &FieldError{Key: "filter", Err: trimField(err, filter.Field)})
		}
	}
	if ep.Transform != "" {
		if _, err := transform.Compile(ep.Transform); err != nil {
			out = append(out, &FieldError{Key: "transform", Err: trimField(err, transform.Field)})
		}
	}
	return out
}

// CompileFilter compiles expr with payloads bounded by MaxPayloadBytes.
func (s Security) CompileFilter(expr string) (*filter.Filter, error) {
	return filter.Compile(expr, filter.Options{MaxPayloadBytes: s.MaxPayloadBytes})
}

// trimField drops the "filter: " or "transform: " the packages put first,
// since a FieldError names its key already: "filter: 1:14: Syntax error".
func trimField(err error, field string) error {
	msg := err.Error()
	if len(msg) > len(field)+2 && msg[:len(field)+2] == field+": " {
		return &trimmed{msg: msg[len(field)+2:], err: err}
	}
	return err
}

type trimmed struct {
	msg string
	err error
}

func (t *trimmed) Error() string { return t.msg }
func (t *trimmed) Unwrap() error { return t.err }

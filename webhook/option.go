package webhook

import "time"

// Option configures a [Verifier] or a [Deduper]. An option that does not
// apply to the value being built is ignored.
type Option func(*options)

type options struct {
	tolerance time.Duration
	now       func() time.Time
}

func buildOptions(opts []Option) options {
	o := options{tolerance: DefaultTolerance, now: time.Now}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	return o
}

// WithTolerance sets how far webhook-timestamp may lie from the current time,
// in either direction, for [Verifier.Verify] to accept it. It must be
// positive; the default is [DefaultTolerance]. A [Deduper] ignores it.
func WithTolerance(d time.Duration) Option {
	return func(o *options) { o.tolerance = d }
}

// WithClock replaces time.Now as the source of the current time, for tests
// and for applications that keep their own clock. A nil now is ignored.
func WithClock(now func() time.Time) Option {
	return func(o *options) {
		if now != nil {
			o.now = now
		}
	}
}

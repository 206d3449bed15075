package hookjettest

import (
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/hookjet/hookjet/config"
)

// Option changes how [Start] runs hookjet.
type Option func(*options)

type options struct {
	configure []func(*config.Config)
	tp        trace.TracerProvider
	log       *slog.Logger
	wait      time.Duration
}

// WithConfig lets fn change the configuration before hookjet starts (after
// hookjettest's own settings: a temporary data_dir, free loopback ports,
// loopback delivery allowed, fast retries). The result must validate.
func WithConfig(fn func(*config.Config)) Option {
	return func(o *options) { o.configure = append(o.configure, fn) }
}

// WithSettings lets fn change the settings every endpoint added with
// [Hookjet.AddEndpoint] gets (config key defaults): timeout, retry,
// breaker, rate limit, max in flight.
func WithSettings(fn func(*config.Settings)) Option {
	return WithConfig(func(c *config.Config) { fn(&c.Defaults) })
}

// WithRetry sets the retry policy of the endpoints: at most maxAttempts
// attempts with a full-jitter backoff starting at base (capped at 10·base).
func WithRetry(maxAttempts int, base time.Duration) Option {
	return WithSettings(func(s *config.Settings) {
		s.Retry.MaxAttempts = maxAttempts
		s.Retry.Base = base
		s.Retry.Cap = 10 * base
	})
}

// WithTracerProvider sends hookjet's delivery spans to tp, for example an
// SDK provider with tracetest's in-memory exporter. The test owns tp.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(o *options) { o.tp = tp }
}

// WithLogger sends hookjet's logs to log. By default warnings and errors go
// to t.Log.
func WithLogger(log *slog.Logger) Option {
	return func(o *options) { o.log = log }
}

// WithTimeout bounds each wait ([Hookjet.WaitDelivered],
// [Hookjet.WaitDeadLetter]). Default 10s.
func WithTimeout(d time.Duration) Option {
	return func(o *options) { o.wait = d }
}

// Package breaker keeps per-endpoint health: a circuit breaker and rolling
// latency statistics, persisted in bbolt so that both survive a restart.
//
// # Breaker
//
// A Registry holds one breaker per configured endpoint, made when the
// endpoint first reports a result (or at start, for a persisted one): an
// idle endpoint costs about 35 bytes, not a breaker. A breaker is Closed
// until Settings.FailureThreshold consecutive failures open it for the
// current cooldown (Settings.Cooldown at first). When the cooldown has passed,
// the next Acquire moves it to HalfOpen and lets exactly one probe through.
// A successful probe closes the breaker and resets the cooldown to
// Settings.Cooldown; a Neutral one (a 429) leaves it half-open for another
// probe, since a rate-limited answer proves nothing; a failed probe opens it again with the cooldown
// doubled, up to Settings.MaxCooldown. An endpoint whose p95 latency over the
// window exceeds Settings.SlowP95 (with at least 20 samples) opens after half
// the threshold (at least one failure).
//
// A delivery worker calls Acquire before each request and, when it was
// allowed, exactly one of Record (the request produced a result) or Release
// (it did not, for example on shutdown).
//
// # Statistics
//
// Every Record adds its latency to a rolling 24-hour window: 24 hourly slots,
// each a fixed log-linear histogram of 100 buckets from 100µs to 120s (about
// 7% relative error), plus first-attempt counts. Memory per endpoint is
// bounded and percentiles cost one pass over 102 buckets.
//
// # Persistence
//
// Each endpoint's state is one JSON record ({"v":1,...}) under its id in the
// bucket "breaker". Record and Acquire only mark the endpoint dirty; Flush
// writes every dirty endpoint in one transaction and Run calls it every
// second. State transitions are flushed at once, before they are reported,
// so an open breaker survives a crash.
package breaker

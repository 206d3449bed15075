// Package config loads, checks and exposes hookjet's YAML configuration.
//
// [Load] (or [Parse]) builds a [Config] in this order:
//
//  1. [Default] values;
//  2. the YAML file, strictly: an unknown or duplicate key is an error naming
//     its path ("endpoints[0].retyr: unknown key"), durations need a unit
//     ("5s", "1h30m"), a null value leaves the default in place, and
//     anchors, aliases and "<<" merge keys work as in YAML 1.1;
//  3. environment overrides HOOKJET_<SECTION>_<KEY> for every scalar or list
//     key outside endpoints, derived from the YAML keys: HOOKJET_DATA_DIR,
//     HOOKJET_NATS_URL, HOOKJET_STREAMS_DUPLICATE_WINDOW,
//     HOOKJET_DEFAULTS_RETRY_MAX_ATTEMPTS, HOOKJET_SECURITY_ALLOW_CIDRS
//     (comma separated) and so on ([EnvVars] lists them); an empty
//     variable counts as unset;
//  4. endpoints, each starting from a copy of the resolved defaults and
//     overriding them field by field, so that `retry: {max_attempts: 4}` keeps
//     the default base, cap and max_age;
//  5. normalisation (rate_limit.burst defaults to max(1, ceil(rps)); event
//     patterns that another pattern of the same endpoint covers are dropped,
//     because JetStream refuses overlapping filter subjects in one consumer);
//  6. [Config.Validate].
//
// Every error wraps [ErrInvalid]; each problem is a [*FieldError] naming its
// key, and all problems are reported at once.
//
// # Secrets
//
// Credentials (admin and NATS tokens, the NATS password, endpoint signing
// secrets and endpoint header values) are [Secret] values. Whatever prints
// them (fmt, log/slog, encoding/json) sees "[redacted]"; only
// [Secret.Reveal] returns the value. In the file or in an environment
// override a secret may be given as
//
//	env:NAME     the value of environment variable NAME
//	file:/path   the content of the file, surrounding white space trimmed
//	anything     else is taken literally
//
// A relative file path is relative to the working directory.
//
// # Event patterns
//
// Endpoints subscribe to event types with NATS-style patterns: tokens are
// separated by '.', '*' matches exactly one token and '>' one or more trailing
// tokens. [MatchEvent] applies a pattern to an event type.
package config

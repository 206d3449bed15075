package config

import (
	"errors"
	"fmt"
	"net/netip"
	"time"
)

// Config is hookjet's whole configuration. Build it with [Load] or [Parse];
// a Config assembled by a program should start from [Default] and be checked
// with [Config.Validate].
type Config struct {
	// DataDir holds the embedded NATS store and state.db. Default "./data".
	DataDir string `yaml:"data_dir"`
	// NATS says which NATS deployment to use.
	NATS NATS `yaml:"nats"`
	// Streams sets the JetStream stream limits.
	Streams Streams `yaml:"streams"`
	// Worker sizes the delivery workers.
	Worker Worker `yaml:"worker"`
	// Dedupe configures the idempotency ledger.
	Dedupe Dedupe `yaml:"dedupe"`
	// Admin configures the admin HTTP API.
	Admin Admin `yaml:"admin"`
	// Log configures logging.
	Log Log `yaml:"log"`
	// Security holds the SSRF and resource limits.
	Security Security `yaml:"security"`
	// Tracing configures OpenTelemetry traces (config/tracing.go).
	Tracing Tracing `yaml:"tracing"`
	// Defaults holds the settings every endpoint inherits.
	Defaults Settings `yaml:"defaults"`
	// Metrics bounds the metrics' label cardinality.
	Metrics Metrics `yaml:"metrics"`
	// Outbox configures the PostgreSQL outbox relay.
	Outbox Outbox `yaml:"outbox"`
	// Inbound configures the inbound gateway (config/inbound.go).
	Inbound Inbound `yaml:"inbound"`
	// Portal configures the customer portal (config/portal.go).
	Portal Portal `yaml:"portal"`
	// Publish configures the publish API (config/publish.go).
	Publish Publish `yaml:"publish"`
	// Console configures what the console and portal show (config/console.go).
	Console Console `yaml:"console"`
	// Catalog configures the event-type catalogue (config/catalog.go).
	Catalog Catalog `yaml:"catalog"`
	// Endpoints are the webhook receivers, with their settings resolved
	// (Defaults merged with each endpoint's overrides). Nil means none.
	Endpoints []Endpoint `yaml:"endpoints"`

	// unresolved are the secrets LoadClient could not read, for Need;
	// source is the file it read.
	unresolved []unresolved
	source     string
}

// Need reports the secrets under keys (such as "admin.token", "nats" or
// "inbound.sources[2]") that [LoadClient] or [ParseClient] could not
// resolve: an error wrapping [ErrInvalid] that names each key and why, or
// nil. A Config from Load or Parse resolved everything and needs nothing.
func (c *Config) Need(keys ...string) error {
	var errs []error
	for _, u := range c.unresolved {
		for _, k := range keys {
			if under(u.path, k) {
				errs = append(errs, u.err)
				break
			}
		}
	}
	if len(errs) == 0 {
		return nil
	}
	err := errors.Join(errs...)
	if c.source != "" {
		return fmt.Errorf("%s: %w", c.source, err)
	}
	return err
}

// NATS says which NATS deployment hookjet uses. With URL empty hookjet runs an
// embedded server, and User/Password/Token set the authentication that server
// requires; with URL set they are the credentials hookjet presents.
type NATS struct {
	// URL is a comma-separated list of nats:// or tls:// server URLs.
	// Empty (the default) starts the embedded server.
	URL string `yaml:"url"`
	// Listen is the embedded server's client address. Default
	// "127.0.0.1:4222". A non-loopback address requires Token or
	// User and Password.
	Listen string `yaml:"listen"`
	// Creds is the path of a .creds file (JWT and nkey seed). Empty means none.
	Creds string `yaml:"creds"`
	// NKey is the path of an nkey seed file. Empty means none.
	NKey string `yaml:"nkey"`
	// User is the user name; empty means no user/password authentication.
	User string `yaml:"user"`
	// Password goes with User.
	Password Secret `yaml:"password"`
	// Token is a bearer token; empty means none.
	Token Secret `yaml:"token"`
	// TLSCA is the path of a PEM CA bundle to verify the server; empty means
	// the system roots.
	TLSCA string `yaml:"tls_ca"`
	// TLSCert is the path of a PEM client certificate; empty means none.
	TLSCert string `yaml:"tls_cert"`
	// TLSKey is the path of the PEM key for TLSCert.
	TLSKey string `yaml:"tls_key"`
	// Sync is the embedded server's JetStream sync policy: "always" (the
	// default; an event is fsynced before its PubAck, so an acknowledged
	// event survives a power cut) or a duration such as "2m" (JetStream's
	// own default: fsync every interval, faster, and a power cut or kernel
	// crash loses the events acknowledged in the last interval). Ignored
	// with URL: the servers' own configuration decides, and hookjet reads
	// and reports it at start (see README "Durability").
	Sync string `yaml:"sync"`
}

// SyncAlways is the value of NATS.Sync that fsyncs every stored message.
const SyncAlways = "always"

// SyncInterval returns the lazy sync interval NATS.Sync sets, and false for
// "always" (or empty, the same). The value must have passed Validate.
func (n NATS) SyncInterval() (time.Duration, bool) {
	if n.Sync == "" || n.Sync == SyncAlways {
		return 0, false
	}
	d, err := time.ParseDuration(n.Sync)
	if err != nil || d <= 0 {
		return 0, false
	}
	return d, true
}

// Streams sets the JetStream stream limits, so that storage never grows
// without bound.
type Streams struct {
	// Replicas is the stream replication factor, 1..5. Default 1; use 3 on a
	// JetStream cluster.
	Replicas int `yaml:"replicas"`
	// DuplicateWindow is how long JetStream remembers Nats-Msg-Id values.
	// Default 2m; at most MaxAge.
	DuplicateWindow time.Duration `yaml:"duplicate_window"`
	// MaxAge is how long an event is kept. Default 168h.
	MaxAge time.Duration `yaml:"max_age"`
	// MaxBytes caps the events stream. Past 90% of it hookjet trims the
	// oldest events every delivery has settled, so producers are refused
	// only when undelivered events alone fill it. Default 8 GiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// TasksMaxBytes bounds HOOKJET_TASKS (parked deliveries and scheduled
	// retries): a delivery that would pass it is dead-lettered with reason
	// overflow, so the server never drops a task. The stream's own limit
	// sits above it. Default 8 GiB.
	TasksMaxBytes int64 `yaml:"tasks_max_bytes"`
	// DLQMaxAge is how long a dead letter is kept. Default 720h.
	DLQMaxAge time.Duration `yaml:"dlq_max_age"`
	// DLQMaxBytes caps the dead-letter stream. Default 1 GiB.
	DLQMaxBytes int64 `yaml:"dlq_max_bytes"`
}

// Worker sizes the delivery workers.
type Worker struct {
	// Concurrency is the total number of requests in flight, 1..100000.
	// Default 256.
	Concurrency int `yaml:"concurrency"`
	// ShutdownGrace is how long in-flight deliveries may finish after a
	// shutdown signal. Default 30s.
	ShutdownGrace time.Duration `yaml:"shutdown_grace"`
}

// Dedupe configures the idempotency ledger.
type Dedupe struct {
	// TTL is how long event ids are remembered, beyond the stream's
	// duplicate window. Default 24h.
	TTL time.Duration `yaml:"ttl"`
}

// Admin configures the admin HTTP API.
type Admin struct {
	// Listen is the API's address. Default "127.0.0.1:8089". A non-loopback
	// address requires a token.
	Listen string `yaml:"listen"`
	// Token is the bearer token the API requires; empty means none (allowed
	// on loopback only).
	Token Secret `yaml:"token"`
	// TokenFile, when set, is a file whose trimmed content becomes Token.
	// It cannot be combined with token.
	TokenFile string `yaml:"token_file"`
}

// Log configures logging.
type Log struct {
	// Format is "text" (tint, coloured on a terminal; the default) or "json".
	Format string `yaml:"format"`
	// Level is "debug", "info" (the default), "warn" or "error".
	Level string `yaml:"level"`
	// Enabled turns the delivery log (stream HOOKJET_LOG: a record per
	// attempt) on. Default true.
	Enabled bool `yaml:"enabled"`
	// MaxAge is how long delivery-log records are kept. Default 72h.
	MaxAge time.Duration `yaml:"max_age"`
	// MaxBytes caps the delivery log; the oldest records go first. Default
	// 8 GiB.
	MaxBytes int64 `yaml:"max_bytes"`
	// ResponseBytes is how much of a non-2xx response body a record keeps,
	// 0..65536. Default 1024; 0 keeps none.
	ResponseBytes int `yaml:"response_bytes"`
}

// Metrics bounds the metrics' label cardinality.
type Metrics struct {
	// MaxEndpointSeries is how many endpoints get series of their own, the
	// first to need one; the rest share endpoint="_other". 1..100000.
	// Default 1000.
	MaxEndpointSeries int `yaml:"max_endpoint_series"`
}

// Security holds the SSRF protection and resource limits.
type Security struct {
	// AllowPrivateNetworks lets deliveries reach loopback, private,
	// link-local, CGNAT, multicast and reserved addresses. Default false.
	AllowPrivateNetworks bool `yaml:"allow_private_networks"`
	// AllowCIDRs opens only these ranges (CIDR notation) of the otherwise
	// refused addresses. Empty means none.
	AllowCIDRs []string `yaml:"allow_cidrs"`
	// HTTPSOnly refuses endpoint URLs that are not https. Default false.
	HTTPSOnly bool `yaml:"https_only"`
	// MaxPayloadBytes caps an event payload, 1 byte..16 MiB. Default 1 MiB.
	MaxPayloadBytes int `yaml:"max_payload_bytes"`
	// MaxEndpoints caps the number of endpoints, 1..1000000. Default 100000.
	MaxEndpoints int `yaml:"max_endpoints"`
	// EgressProxy is the HTTP proxy every delivery goes through
	// (http://host:port, optionally with user:password); empty means none.
	// The SSRF guard checks each target before the proxy is asked for the
	// checked address (docs/security.md).
	EgressProxy string `yaml:"egress_proxy"`
	// SecretKey encrypts the signing secrets and header values of endpoints
	// created through the admin API (AES-256-GCM), and a key derived from
	// it marks hookjet's own events (docs/operational-events.md): 32 random
	// bytes in standard base64 ("openssl rand -base64 32"), or the
	// env:/file: forms.
	// Empty means generated into data_dir/secret.key with the embedded
	// server, and is an error with nats.url (every process must share it).
	SecretKey Secret `yaml:"secret_key"`
}

// Prefixes returns AllowCIDRs parsed and masked, skipping entries that do not
// parse (which [Config.Validate] reports).
func (s Security) Prefixes() []netip.Prefix {
	out := make([]netip.Prefix, 0, len(s.AllowCIDRs))
	for _, c := range s.AllowCIDRs {
		if p, err := netip.ParsePrefix(c); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// Settings are the per-endpoint delivery settings. [Config.Defaults] holds
// the defaults; each [Endpoint] embeds its resolved settings.
type Settings struct {
	// Timeout bounds one HTTP attempt, 1ms..10m. Default 15s.
	Timeout time.Duration `yaml:"timeout"`
	// MaxInFlight caps the endpoint's concurrent requests, 1..10000.
	// Default 16.
	MaxInFlight int `yaml:"max_in_flight"`
	// RateLimit is the endpoint's token bucket; zero means unlimited.
	RateLimit RateLimit `yaml:"rate_limit"`
	// Retry says how failed attempts are retried.
	Retry Retry `yaml:"retry"`
	// Breaker configures the endpoint's circuit breaker.
	Breaker Breaker `yaml:"breaker"`
	// MaxBacklog caps the endpoint's waiting deliveries (parked tasks and
	// scheduled retries), 1..10000000: one that would pass it is
	// dead-lettered with reason overflow. Default 100000.
	MaxBacklog int `yaml:"max_backlog"`
	// Ordering is OrderingNone (the default: deliveries go in any order)
	// or OrderingKey: deliveries of events with the same ordering key
	// (Hookjet-Ordering-Key) are attempted one at a time, in publish order.
	// Events without a key stay unordered.
	Ordering string `yaml:"ordering"`
	// OrderingOnDeadLetter says what an ordered key does once one of its
	// deliveries is dead-lettered: OnDeadLetterSkip (the default) moves on
	// to the key's next event, OnDeadLetterHold holds the key until that
	// dead letter is replayed or discarded.
	OrderingOnDeadLetter string `yaml:"ordering_on_dead_letter"`
	// TransformTimeout interrupts one run of the endpoint's transform,
	// 1ms..10s. Default 50ms.
	TransformTimeout time.Duration `yaml:"transform_timeout"`
	// TransformMaxMemory interrupts a run of the endpoint's transform once
	// the heap grew by more than it, 1 MiB..1 GiB. Default 64 MiB.
	TransformMaxMemory int64 `yaml:"transform_max_memory"`
}

// Values of Settings.Ordering and Settings.OrderingOnDeadLetter.
const (
	OrderingNone     = "none"
	OrderingKey      = "key"
	OnDeadLetterSkip = "skip"
	OnDeadLetterHold = "hold"
)

// Ordered reports whether deliveries of one ordering key go one at a time
// (ordering: key). An empty Ordering, as in a Settings built without
// [Default], is none.
func (s Settings) Ordered() bool { return s.Ordering == OrderingKey }

// HoldsOnDeadLetter reports whether an ordered key holds after one of its
// deliveries is dead-lettered (ordering_on_dead_letter: hold). An empty
// value is skip.
func (s Settings) HoldsOnDeadLetter() bool { return s.OrderingOnDeadLetter == OnDeadLetterHold }

// RateLimit is a token bucket.
type RateLimit struct {
	// RPS is the sustained requests per second; 0 (the default) means
	// unlimited.
	RPS float64 `yaml:"rps"`
	// Burst is the bucket size. 0 with RPS > 0 becomes max(1, ceil(RPS))
	// when the configuration is parsed.
	Burst int `yaml:"burst"`
}

// Retry says how failed attempts are retried: after a full-jitter backoff of
// uniform(0, min(Cap, Base·2^attempt)), until MaxAttempts or MaxAge.
type Retry struct {
	// Base is the first backoff step. Default 5s.
	Base time.Duration `yaml:"base"`
	// Cap bounds one backoff (and a Retry-After wait); at least Base.
	// Default 1h.
	Cap time.Duration `yaml:"cap"`
	// MaxAttempts is the number of attempts before a message is
	// dead-lettered as exhausted, 1..1000. Default 20.
	MaxAttempts int `yaml:"max_attempts"`
	// MaxAge is how long after its first attempt a message is dead-lettered
	// as expired. Default 24h.
	MaxAge time.Duration `yaml:"max_age"`
}

// Breaker configures an endpoint's circuit breaker.
type Breaker struct {
	// FailureThreshold is the number of consecutive failures that open the
	// breaker, 1..10000 (halved for slow endpoints). Default 10.
	FailureThreshold int `yaml:"failure_threshold"`
	// Cooldown is how long the breaker stays open first. Default 5m.
	Cooldown time.Duration `yaml:"cooldown"`
	// MaxCooldown bounds the doubling cooldown; at least Cooldown.
	// Default 1h.
	MaxCooldown time.Duration `yaml:"max_cooldown"`
	// SlowP95 is the p95 latency above which an endpoint counts as slow.
	// Default 5s.
	SlowP95 time.Duration `yaml:"slow_p95"`
}

// Endpoint is one webhook receiver.
type Endpoint struct {
	// ID names the endpoint: [a-z0-9_-]+, at most 64 characters, unique.
	ID string `yaml:"id"`
	// URL is the http or https URL deliveries are POSTed to, without
	// user info; required for webhook destinations only.
	URL string `yaml:"url"`
	// Destination is where deliveries go; the zero value is the webhook
	// (the HTTP POST to URL).
	Destination Destination `yaml:"destination"`
	// Secrets are the "whsec_<base64>" signing secrets; each signs every
	// request, so secrets rotate without downtime. At least one.
	Secrets []Secret `yaml:"secrets"`
	// Events are the NATS-style patterns over event types the endpoint
	// subscribes to, without overlaps. Default [">"] (every event).
	Events []string `yaml:"events"`
	// Headers are extra request headers. Their values are secrets too. Nil
	// means none.
	Headers map[string]Secret `yaml:"headers"`
	// InsecureSkipVerify turns off TLS certificate verification. Default false.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	// Tenant is the customer the endpoint belongs to ([a-z0-9_-]): it
	// receives only events that name this tenant (Hookjet-Tenant), and its
	// deliveries obey the strict SSRF guard unless
	// portal.allow_private_networks. Empty means none: an operator's
	// endpoint, which receives by pattern whatever the event's tenant.
	Tenant string `yaml:"tenant"`
	// Description is free text for operators; empty means none.
	Description string `yaml:"description"`
	// Owner is who answers for the endpoint's dead letters (free text, at
	// most 256 bytes); empty means nobody named.
	Owner string `yaml:"owner"`
	// Filter is a CEL expression over the event (package filter): the
	// endpoint receives only the events for which it yields true. Empty
	// means every event its patterns and tenant match.
	Filter string `yaml:"filter"`
	// Transform is a JavaScript function handler(webhook) that reshapes
	// each delivery (package transform), at most 64 KiB. Empty means none:
	// the payload goes as published.
	Transform string `yaml:"transform"`
	// Auth is how the endpoint's requests authenticate (config/auth.go);
	// the zero value is none.
	Auth Auth `yaml:"auth"`
	// Proxy is the endpoint's egress proxy: empty means
	// security.egress_proxy, "none" none, otherwise an http:// URL.
	// Operators only: the portal never sets it.
	Proxy string `yaml:"proxy"`
	// Source says who owns the endpoint: SourceConfig (the file) or
	// SourceAPI (the admin API). Never read from a file.
	Source string `yaml:"-"`
	// CreatedAt and UpdatedAt are when an API endpoint was created and last
	// changed; zero for config endpoints.
	CreatedAt time.Time `yaml:"-"`
	UpdatedAt time.Time `yaml:"-"`
	// SecretExpiry runs parallel to Secrets: the time each secret stops
	// signing (a rotated-out secret in its grace period), or the zero time
	// for never. Nil means no secret expires.
	SecretExpiry []time.Time `yaml:"-"`
	// Settings are the endpoint's resolved settings: Config.Defaults with
	// this endpoint's overrides applied field by field.
	Settings `yaml:",inline"`
}

// Endpoint sources.
const (
	SourceConfig = "config"
	SourceAPI    = "api"
)

// Default returns the configuration used when a file sets nothing.
func Default() Config {
	return Config{
		DataDir: "./data",
		NATS:    NATS{Listen: "127.0.0.1:4222", Sync: SyncAlways},
		Streams: Streams{
			Replicas:        1,
			DuplicateWindow: 2 * time.Minute,
			MaxAge:          168 * time.Hour,
			MaxBytes:        8 << 30,
			TasksMaxBytes:   8 << 30,
			DLQMaxAge:       720 * time.Hour,
			DLQMaxBytes:     1 << 30,
		},
		Worker:   Worker{Concurrency: 256, ShutdownGrace: 30 * time.Second},
		Dedupe:   Dedupe{TTL: 24 * time.Hour},
		Admin:    Admin{Listen: "127.0.0.1:8089"},
		Log:      Log{Format: "text", Level: "info", Enabled: true, MaxAge: 72 * time.Hour, MaxBytes: 8 << 30, ResponseBytes: 1024},
		Security: Security{MaxPayloadBytes: 1 << 20, MaxEndpoints: 100000},
		Metrics:  Metrics{MaxEndpointSeries: 1000},
		Outbox:   defaultOutbox(),
		Inbound:  defaultInbound(),
		Console:  Console{ShowPayloads: true},
		Catalog:  Catalog{Validate: "warn"},
		Defaults: Settings{
			Timeout:     15 * time.Second,
			MaxInFlight: 16,
			MaxBacklog:  100000,
			Ordering:    OrderingNone,
			Retry: Retry{
				Base:        5 * time.Second,
				Cap:         time.Hour,
				MaxAttempts: 20,
				MaxAge:      24 * time.Hour,
			},
			Breaker: Breaker{
				FailureThreshold: 10,
				Cooldown:         5 * time.Minute,
				MaxCooldown:      time.Hour,
				SlowP95:          5 * time.Second,
			},
			OrderingOnDeadLetter: OnDeadLetterSkip,
			TransformTimeout:     50 * time.Millisecond,
			TransformMaxMemory:   64 << 20,
		},
	}
}

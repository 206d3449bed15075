package api

import (
	"time"

	"github.com/hookjet/hookjet/attempt"
)

// LastTest is the outcome of the last test event (POST .../test) sent to an
// endpoint by the process that answers.
type LastTest struct {
	EventID    string    `json:"event_id"`
	At         time.Time `json:"at"`
	Class      string    `json:"class"`
	Status     int       `json:"status"`
	DurationMS float64   `json:"duration_ms"`
	Error      string    `json:"error,omitempty"`
}

// LastTestOf is the LastTest of a test event's attempt record.
func LastTestOf(r attempt.Record) *LastTest {
	return &LastTest{EventID: r.EventID, At: r.StartedAt.UTC(), Class: r.Class, Status: r.Status, DurationMS: r.DurationMS, Error: r.Error}
}

// EndpointSettings are an endpoint's effective settings (the defaults with
// its overrides), durations as Go duration strings like the API takes them.
type EndpointSettings struct {
	Timeout     string `json:"timeout"`
	MaxInFlight int    `json:"max_in_flight"`
	RateLimit   struct {
		RPS   float64 `json:"rps"`
		Burst int     `json:"burst"`
	} `json:"rate_limit"`
	Retry struct {
		Base        string `json:"base"`
		Cap         string `json:"cap"`
		MaxAttempts int    `json:"max_attempts"`
		MaxAge      string `json:"max_age"`
	} `json:"retry"`
	Breaker struct {
		FailureThreshold int    `json:"failure_threshold"`
		Cooldown         string `json:"cooldown"`
		MaxCooldown      string `json:"max_cooldown"`
		SlowP95          string `json:"slow_p95"`
	} `json:"breaker"`
	// MaxBacklog caps the endpoint's waiting deliveries; past it a
	// delivery is dead-lettered as overflow.
	MaxBacklog int `json:"max_backlog"`
	// Ordering is "none" or "key": deliveries of one ordering key go one
	// at a time, in publish order; OrderingOnDeadLetter is "skip" or
	// "hold": what such a key does once one of its deliveries is
	// dead-lettered.
	Ordering             string `json:"ordering"`
	OrderingOnDeadLetter string `json:"ordering_on_dead_letter"`
	// SecretsExpire lists when each rotated-out secret still in its grace
	// stops signing; empty when none is.
	SecretsExpire []time.Time `json:"secrets_expire,omitempty"`
	// TransformTimeout (a Go duration) and TransformMaxMemory (bytes)
	// bound one run of the endpoint's transform.
	TransformTimeout   string `json:"transform_timeout"`
	TransformMaxMemory int64  `json:"transform_max_memory"`
	// Auth is the type of the endpoint's auth ("basic", "bearer",
	// "oauth2", "mtls"); empty when it has none. Its credentials are never
	// shown.
	Auth string `json:"auth,omitempty"`
	// Proxy is the endpoint's own egress proxy ("none", or its URL with
	// the password shown as xxxxx); empty: security.egress_proxy.
	Proxy string `json:"proxy,omitempty"`
	// Destination is where the endpoint's deliveries go.
	Destination Destination `json:"destination"`
}

// Destination is an endpoint's destination as the API shows it: its type
// and where it publishes, never a credential (a URL's user info shows as
// ***, tokens and passwords not at all).
type Destination struct {
	// Type is webhook, nats, kafka or rabbitmq.
	Type          string   `json:"type"`
	URL           string   `json:"url,omitempty"`
	Subject       string   `json:"subject,omitempty"`
	JetStream     *bool    `json:"jetstream,omitempty"`
	Brokers       []string `json:"brokers,omitempty"`
	Topic         string   `json:"topic,omitempty"`
	SASLMechanism string   `json:"sasl_mechanism,omitempty"`
	Exchange      string   `json:"exchange,omitempty"`
	RoutingKey    string   `json:"routing_key,omitempty"`
	TLS           bool     `json:"tls,omitempty"`
}

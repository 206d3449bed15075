package console

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hookjet/hookjet/api"
)

// The admin API's JSON as shared/DESIGN.md documents it. The console
// decodes its own copies so that it depends on the contract, not on the
// engine's Go types; fields a build does not have yet stay zero.

type summary struct {
	Pending                 uint64   `json:"pending"`
	AwaitingRetry           uint64   `json:"awaiting_retry"`
	InFlight                int64    `json:"in_flight"`
	DeadLetter              uint64   `json:"dead_letter"`
	DeliveredLastHour       int64    `json:"delivered_last_hour"`
	FailedLastHour          int64    `json:"failed_last_hour"`
	OldestPendingAgeSeconds float64  `json:"oldest_pending_age_seconds"`
	Endpoints               int      `json:"endpoints"`
	DisabledEndpoints       int      `json:"disabled_endpoints"`
	OpenBreakers            int      `json:"open_breakers"`
	EventsStored            uint64   `json:"events_stored"`
	LogOldest               string   `json:"log_oldest"`
	OutboxLagSeconds        *float64 `json:"outbox_lag_seconds"`
	Errors                  []string `json:"errors"`
}

type breakerStatus struct {
	State               string     `json:"state"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	CooldownSeconds     float64    `json:"cooldown_seconds"`
	OpenedAt            *time.Time `json:"opened_at"`
	OpenUntil           *time.Time `json:"open_until"`
}

type latency struct {
	P50     float64 `json:"p50"`
	P95     float64 `json:"p95"`
	P99     float64 `json:"p99"`
	Samples int64   `json:"samples"`
}

type endpoint struct {
	ID                      string        `json:"id"`
	URL                     string        `json:"url"`
	Events                  []string      `json:"events"`
	Disabled                bool          `json:"disabled"`
	DisabledReason          string        `json:"disabled_reason"`
	Breaker                 breakerStatus `json:"breaker"`
	LatencyMS               latency       `json:"latency_ms"`
	FirstAttemptSuccessRate float64       `json:"first_attempt_success_rate"`
	Pending                 uint64        `json:"pending"`
	AwaitingRetry           uint64        `json:"awaiting_retry"`
	InFlight                int           `json:"in_flight"`
	HeldUntil               *time.Time    `json:"held_until"`
	DeadLetters             uint64        `json:"dead_letters"`
	ConsecutiveFailures     int           `json:"consecutive_failures"`
	LastSuccess             *time.Time    `json:"last_success"`
	LastFailure             *time.Time    `json:"last_failure"`
	HeaderNames             []string      `json:"header_names"`
	Secrets                 int           `json:"secrets"`
	Source                  string        `json:"source"`
	Tenant                  string        `json:"tenant"`
	Description             string        `json:"description"`
	Owner                   string        `json:"owner"`
	Filter                  string        `json:"filter"`
	Transform               string        `json:"transform"`
	CreatedAt               *time.Time    `json:"created_at"`
	UpdatedAt               *time.Time    `json:"updated_at"`
	LastTest                *lastTest     `json:"last_test"`
	Settings                *settings     `json:"settings"`
	HeldKeys                *api.HeldKeys `json:"held_keys"`
	Secret                  string        `json:"secret"` // create only
	// Waiting says why deliveries wait (api.Waits): customerState renders it.
	Waiting []api.Wait `json:"waiting"`
}

// lastTest is the time and outcome of an endpoint's last test event
// (delivery log); the field names of the log's records are accepted.
type lastTest struct {
	At        *time.Time `json:"at"`
	StartedAt *time.Time `json:"started_at"`
	EventID   string     `json:"event_id"`
	Class     string     `json:"class"`
	Outcome   string     `json:"outcome"`
	Status    loose      `json:"status"`
	Error     string     `json:"error"`
}

// When returns the time of the test.
func (l *lastTest) When() *time.Time {
	if l.At != nil {
		return l.At
	}
	return l.StartedAt
}

// Result names the outcome.
func (l *lastTest) Result() string {
	if l.Outcome != "" {
		return l.Outcome
	}
	return l.Class
}

type settings struct {
	Timeout     loose `json:"timeout"`
	MaxInFlight int   `json:"max_in_flight"`
	RateLimit   struct {
		RPS   float64 `json:"rps"`
		Burst int     `json:"burst"`
	} `json:"rate_limit"`
	Retry struct {
		Base        loose `json:"base"`
		Cap         loose `json:"cap"`
		MaxAttempts int   `json:"max_attempts"`
		MaxAge      loose `json:"max_age"`
	} `json:"retry"`
	MaxBacklog           int         `json:"max_backlog"`
	Ordering             string      `json:"ordering"`
	OrderingOnDeadLetter string      `json:"ordering_on_dead_letter"`
	SecretsExpire        []time.Time `json:"secrets_expire"`
	// Auth is the type of the endpoint's auth ("" none); Proxy its own
	// egress proxy, password hidden ("" the default). Credentials are
	// never shown.
	Auth        string          `json:"auth"`
	Proxy       string          `json:"proxy"`
	Destination api.Destination `json:"destination"`
}

// Ordered reports whether the endpoint delivers one ordering key's events
// one at a time (ordering: key).
func (s *settings) Ordered() bool { return s != nil && s.Ordering == "key" }

// OnDeadLetter is ordering_on_dead_letter, "skip" when not given.
func (s *settings) OnDeadLetter() string {
	if s == nil || s.OrderingOnDeadLetter == "" {
		return "skip"
	}
	return s.OrderingOnDeadLetter
}

type endpointPage struct {
	Endpoints []endpoint `json:"endpoints"`
	Next      string     `json:"next"`
}

type dlqEntry struct {
	Seq          uint64 `json:"seq"`
	EventID      string `json:"event_id"`
	EventType    string `json:"event_type"`
	Endpoint     string `json:"endpoint"`
	Reason       string `json:"reason"`
	Attempts     int    `json:"attempts"`
	LastStatus   loose  `json:"last_status"`
	LastError    string `json:"last_error"`
	LastResponse string `json:"last_response"`
	FirstAttempt string `json:"first_attempt"`
	LastAttempt  string `json:"last_attempt"`
	StoredAt     string `json:"stored_at"`
}

type dlqStat struct {
	Endpoint         string  `json:"endpoint"`
	Count            int     `json:"count"`
	MostCommonReason string  `json:"most_common_reason"`
	MostCommonError  string  `json:"most_common_error"`
	MostCommonStatus loose   `json:"most_common_status"`
	First            string  `json:"first"`
	Last             string  `json:"last"`
	AverageAttempts  float64 `json:"average_attempts"`
}

type replayResult struct {
	Matched  int      `json:"matched"`
	Replayed int      `json:"replayed"`
	Queued   int      `json:"queued"`
	Skipped  int      `json:"skipped"`
	Errors   []string `json:"errors"`
}

// attempt is one record of the delivery log.
type attempt struct {
	EventID    string    `json:"event_id"`
	EventType  string    `json:"event_type"`
	Endpoint   string    `json:"endpoint"`
	Tenant     string    `json:"tenant"`
	Attempt    int       `json:"attempt"`
	Trigger    string    `json:"trigger"`
	StartedAt  time.Time `json:"started_at"`
	DurationMS float64   `json:"duration_ms"`
	Status     int       `json:"status"`
	Class      string    `json:"class"`
	Reason     string    `json:"reason"`
	Error      string    `json:"error"`
	Response   string    `json:"response"`
}

// Number is the attempt's number as a table shows it: "–" for a record
// that is no request of its own (a dead letter, a parking, shown to a
// customer as "waiting", an expiry), whose attempt field only repeats how
// many requests went before it.
func (a attempt) Number() string {
	switch a.Class {
	case "dead_letter", "parked", "waiting", "expired", "discarded":
		return "–"
	}
	return strconv.Itoa(a.Attempt)
}

type attemptPage struct {
	Attempts []attempt `json:"attempts"`
	Next     string    `json:"next"`
}

// event is an event of GET /api/v1/events/{id}, the console's and the
// portal's (portalEvent) view of it.
type event struct {
	ID          string     `json:"id"`
	Type        string     `json:"type"`
	PublishedAt *time.Time `json:"published_at"`
	// Size is the payload's size in bytes; nil when the event log no
	// longer holds the event.
	Size          *int            `json:"size"`
	Seq           uint64          `json:"seq"`
	Tenant        string          `json:"tenant"`
	Key           string          `json:"key"`
	ContentType   string          `json:"content_type"`
	Data          json.RawMessage `json:"data"`
	DataBase64    string          `json:"data_base64"`
	DataTruncated bool            `json:"data_truncated"`
	DataHidden    bool            `json:"data_hidden"`
	Deliveries    []struct {
		Endpoint  string     `json:"endpoint"`
		Number    int        `json:"number"`
		Trigger   string     `json:"trigger"`
		State     string     `json:"state"`
		Held      string     `json:"held"`
		HeldUntil *time.Time `json:"held_until"`
		Reason    string     `json:"reason"`
		Request   *struct {
			Destination string            `json:"destination"`
			Method      string            `json:"method"`
			URL         string            `json:"url"`
			Headers     map[string]string `json:"headers"`
		} `json:"request"`
		Attempts []attempt `json:"attempts"`
	} `json:"deliveries"`
}

// Bytes is the payload's size in bytes, 0 when it is not known.
func (e event) Bytes() int {
	if e.Size == nil {
		return 0
	}
	return *e.Size
}

// Payload is the event's payload as the page shows it: JSON indented, text
// as it is, anything else in base64.
func (e event) Payload() string {
	s, _ := e.payload()
	return s
}

// PayloadIsBase64 says the payload is shown in base64 (it is not text).
func (e event) PayloadIsBase64() bool {
	_, b := e.payload()
	return b
}

func (e event) payload() (text string, isBase64 bool) {
	if len(e.Data) > 0 {
		var buf bytes.Buffer
		if json.Indent(&buf, e.Data, "", "  ") == nil {
			return buf.String(), false
		}
		return string(e.Data), false
	}
	if e.DataBase64 == "" {
		return "", false
	}
	raw, err := base64.StdEncoding.DecodeString(e.DataBase64)
	if err == nil && utf8.Valid(raw) {
		return string(raw), false
	}
	return e.DataBase64, true
}

// eventSummary is one event of GET /api/v1/events.
type eventSummary struct {
	ID          string    `json:"id"`
	Type        string    `json:"type"`
	Tenant      string    `json:"tenant"`
	Key         string    `json:"key"`
	PublishedAt time.Time `json:"published_at"`
	Size        int       `json:"size"`
	Seq         uint64    `json:"seq"`
}

// loose is a JSON scalar shown as text: a string, a number, or null (""),
// for fields whose type differs between builds (last_status).
type loose string

func (l *loose) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case bytes.Equal(b, []byte("null")):
		*l = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*l = loose(s)
	default:
		var n json.Number
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
		*l = loose(n.String())
	}
	if *l == "0" {
		*l = ""
	}
	return nil
}

// Int is the value as a number, 0 when it is not one.
func (l loose) Int() int {
	n, _ := strconv.Atoi(string(l))
	return n
}

// heldShown bounds the held ordering keys a page lists.
const heldShown = 10

// HeldShown is the held ordering keys a page lists: at most heldShown.
// DestinationType is where the endpoint delivers: webhook, nats, kafka or
// rabbitmq.
func (e endpoint) DestinationType() string {
	if e.Settings == nil || e.Settings.Destination.Type == "" {
		return "webhook"
	}
	return e.Settings.Destination.Type
}

// Where is what the console shows of where deliveries go: a webhook's URL,
// or a broker destination's type, address (credentials masked by the API)
// and subject, topic or exchange and routing key.
func (e endpoint) Where() string {
	if e.DestinationType() == "webhook" {
		return e.URL
	}
	d := e.Settings.Destination
	addr := d.URL
	if len(d.Brokers) > 0 {
		addr = strings.Join(d.Brokers, ",")
	}
	switch d.Type {
	case "nats":
		return "nats " + addr + " subject " + d.Subject
	case "kafka":
		return "kafka " + addr + " topic " + d.Topic
	case "rabbitmq":
		return "rabbitmq " + addr + " exchange " + strconv.Quote(d.Exchange) + " routing key " + strconv.Quote(d.RoutingKey)
	}
	return d.Type + " " + addr
}

func (e endpoint) HeldShown() []api.HeldKey {
	if e.HeldKeys == nil {
		return nil
	}
	return e.HeldKeys.Keys[:min(len(e.HeldKeys.Keys), heldShown)]
}

// HeldMore is how many held keys the page does not list.
func (e endpoint) HeldMore() int {
	if e.HeldKeys == nil {
		return 0
	}
	return max(0, e.HeldKeys.Count-len(e.HeldShown()))
}

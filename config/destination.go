package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Destination types an endpoint may name ([Destination.Type]).
const (
	DestinationWebhook  = "webhook"
	DestinationNATS     = "nats"
	DestinationKafka    = "kafka"
	DestinationRabbitMQ = "rabbitmq"
)

// DestinationTypes are the destination types, in the order docs list them.
var DestinationTypes = []string{DestinationWebhook, DestinationNATS, DestinationKafka, DestinationRabbitMQ}

// Destination is where an endpoint's deliveries go: the zero value (or
// type webhook) is the HTTP POST to the endpoint's url; the other types
// publish to a broker, with the fields of their type. Credentials (URL
// user info, token, passwords) are secrets: sealed in the API's store,
// never shown (a URL shows as amqp://***@host/).
type Destination struct {
	// Type is webhook, nats, kafka or rabbitmq; empty means webhook.
	Type string `yaml:"type" json:"type,omitempty"`
	// URL is the broker of a nats (nats://, tls://, several separated by
	// commas) or rabbitmq (amqp://, amqps://) destination, with its
	// credentials where it carries them; empty for kafka and webhook.
	URL Secret `yaml:"url" json:"-"`
	// Subject is a nats destination's subject; it may name {type} and
	// {tenant}; never under $, _INBOX. or hookjet.
	Subject string `yaml:"subject" json:"subject,omitempty"`
	// JetStream, true when unset, publishes to a stream and waits for its
	// ack; false is a core NATS publish: at most once.
	JetStream *bool `yaml:"jetstream" json:"jetstream,omitempty"`
	// Creds is a nats destination's credentials file; empty means none.
	Creds string `yaml:"creds" json:"creds,omitempty"`
	// NKey is a nats destination's nkey seed file; empty means none.
	NKey string `yaml:"nkey" json:"nkey,omitempty"`
	// Token is a nats destination's token; empty means none.
	Token Secret `yaml:"token" json:"-"`
	// User and Password authenticate a nats destination; empty: none.
	User     string `yaml:"user" json:"user,omitempty"`
	Password Secret `yaml:"password" json:"-"`
	// Brokers are a kafka destination's seed brokers, host:port.
	Brokers []string `yaml:"brokers" json:"brokers,omitempty"`
	// Topic is a kafka destination's topic; it may name {type} and {tenant}.
	Topic string `yaml:"topic" json:"topic,omitempty"`
	// SASL authenticates a kafka destination; empty Mechanism means none.
	SASL SASL `yaml:"sasl" json:"sasl,omitzero"`
	// Exchange is a rabbitmq destination's exchange; empty means the
	// default exchange.
	Exchange string `yaml:"exchange" json:"exchange,omitempty"`
	// RoutingKey is a rabbitmq destination's routing key; it may name
	// {type} and {tenant}; empty means the event type.
	RoutingKey string `yaml:"routing_key" json:"routing_key,omitempty"`
	// TLS configures a broker connection's TLS; the zero value means
	// none (but for tls:// and amqps:// URLs: the system's roots).
	TLS DestinationTLS `yaml:"tls" json:"tls,omitzero"`
}

// SASL is a kafka destination's SASL authentication.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `yaml:"mechanism" json:"mechanism,omitempty"`
	// User and Password are the credentials.
	User     string `yaml:"user" json:"user,omitempty"`
	Password Secret `yaml:"password" json:"-"`
}

// DestinationTLS is a broker connection's TLS settings.
type DestinationTLS struct {
	// Enabled turns TLS on (implied by any other field).
	Enabled bool `yaml:"enabled" json:"enabled,omitempty"`
	// CAFile is a PEM file of trusted authorities; empty: the system's.
	CAFile string `yaml:"ca_file" json:"ca_file,omitempty"`
	// CertFile and KeyFile are a client certificate and its key.
	CertFile string `yaml:"cert_file" json:"cert_file,omitempty"`
	KeyFile  string `yaml:"key_file" json:"key_file,omitempty"`
	// InsecureSkipVerify turns certificate verification off.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify" json:"insecure_skip_verify,omitempty"`
}

// TypeName returns the destination's type, webhook when unset.
func (d *Destination) TypeName() string {
	if d.Type == "" {
		return DestinationWebhook
	}
	return d.Type
}

// IsWebhook reports whether the destination is the HTTP POST.
func (d *Destination) IsWebhook() bool { return d.TypeName() == DestinationWebhook }

// MaskedURL returns the URL with its user info shown as ***
// (amqp://***@host/vhost); "" when there is none.
func (d *Destination) MaskedURL() string { return MaskURL(d.URL.Reveal()) }

// MaskURL returns each comma-separated URL of s with its user info
// replaced by ***.
func MaskURL(s string) string {
	if s == "" {
		return ""
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		u, err := url.Parse(strings.TrimSpace(p))
		if err != nil {
			parts[i] = "[invalid URL]"
			continue
		}
		if u.User != nil {
			u.User = nil
			parts[i] = strings.Replace(u.String(), "://", "://***@", 1)
		}
	}
	return strings.Join(parts, ",")
}

// Options returns the destination's options for its opener, as JSON with
// every credential revealed (package destination: Endpoint.Options); nil
// for a webhook.
func (d *Destination) Options() []byte {
	if d.IsWebhook() {
		return nil
	}
	m := map[string]any{"type": d.Type}
	put := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	put("url", d.URL.Reveal())
	put("subject", d.Subject)
	put("creds", d.Creds)
	put("nkey", d.NKey)
	put("token", d.Token.Reveal())
	put("user", d.User)
	put("password", d.Password.Reveal())
	put("topic", d.Topic)
	put("exchange", d.Exchange)
	put("routing_key", d.RoutingKey)
	if d.JetStream != nil {
		m["jetstream"] = *d.JetStream
	}
	if len(d.Brokers) > 0 {
		m["brokers"] = d.Brokers
	}
	if d.SASL.Mechanism != "" {
		m["sasl"] = map[string]string{"mechanism": d.SASL.Mechanism, "user": d.SASL.User, "password": d.SASL.Password.Reveal()}
	}
	if d.TLS != (DestinationTLS{}) {
		m["tls"] = d.TLS
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic("config: destination options: " + err.Error()) // strings, bools and lists only
	}
	return b
}

// destinationJSON is a destination as the admin API receives it.
type destinationJSON struct {
	Type       string          `json:"type"`
	URL        string          `json:"url"`
	Subject    string          `json:"subject"`
	JetStream  *bool           `json:"jetstream"`
	Creds      string          `json:"creds"`
	NKey       string          `json:"nkey"`
	Token      string          `json:"token"`
	User       string          `json:"user"`
	Password   string          `json:"password"`
	Brokers    []string        `json:"brokers"`
	Topic      string          `json:"topic"`
	SASL       *saslJSON       `json:"sasl"`
	Exchange   string          `json:"exchange"`
	RoutingKey string          `json:"routing_key"`
	TLS        *DestinationTLS `json:"tls"`
}

type saslJSON struct {
	Mechanism string `json:"mechanism"`
	User      string `json:"user"`
	Password  string `json:"password"`
}

// decodeDestination decodes the admin API's destination object; an
// unknown field or a value of the wrong type is an error that names it,
// never a value.
func decodeDestination(raw []byte) (Destination, error) {
	var j destinationJSON
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Destination{}, fmt.Errorf("%s: want %s", te.Field, te.Type)
		}
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return Destination{}, fmt.Errorf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		}
		return Destination{}, errors.New("want an object: type and the fields of its type")
	}
	d := Destination{
		Type: j.Type, URL: NewSecret(j.URL), Subject: j.Subject, JetStream: j.JetStream,
		Creds: j.Creds, NKey: j.NKey, Token: NewSecret(j.Token), User: j.User, Password: NewSecret(j.Password),
		Brokers: j.Brokers, Topic: j.Topic, Exchange: j.Exchange, RoutingKey: j.RoutingKey,
	}
	if j.SASL != nil {
		d.SASL = SASL{Mechanism: j.SASL.Mechanism, User: j.SASL.User, Password: NewSecret(j.SASL.Password)}
	}
	if j.TLS != nil {
		d.TLS = *j.TLS
	}
	return d, nil
}

// validateDestination checks an endpoint's destination, with keys under
// prefix ("endpoints[i]" or ""): destination.type, destination.url, ...
func validateDestination(p *problems, prefix string, d *Destination) {
	key := func(k string) string { return child(prefix, "destination."+k) }
	switch d.TypeName() {
	case DestinationWebhook:
		return
	case DestinationNATS:
		if d.URL.IsZero() {
			p.add(key("url"), "required for a nats destination")
		}
		for _, u := range strings.Split(d.URL.Reveal(), ",") {
			if d.URL.IsZero() {
				break
			}
			if err := checkNATSURL(strings.TrimSpace(u)); err != nil {
				p.add(key("url"), "%s: %w", MaskURL(u), err)
			}
		}
		if err := checkSubject(d.Subject); err != nil {
			p.add(key("subject"), "%w", err)
		}
	case DestinationKafka:
		if len(d.Brokers) == 0 {
			p.add(key("brokers"), "at least one host:port for a kafka destination")
		}
		for i, b := range d.Brokers {
			if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
				p.add(fmt.Sprintf("%s[%d]", key("brokers"), i), "%q is not host:port", b)
			}
		}
		if err := checkTopic(d.Topic); err != nil {
			p.add(key("topic"), "%w", err)
		}
		switch d.SASL.Mechanism {
		case "", "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			p.add(key("sasl.mechanism"), "%q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", d.SASL.Mechanism)
		}
		if d.SASL.Mechanism != "" && d.SASL.User == "" {
			p.add(key("sasl.user"), "required with sasl.mechanism")
		}
	case DestinationRabbitMQ:
		if d.URL.IsZero() {
			p.add(key("url"), "required for a rabbitmq destination")
		} else if u, err := url.Parse(d.URL.Reveal()); err != nil || (u.Scheme != "amqp" && u.Scheme != "amqps") || u.Host == "" {
			p.add(key("url"), "%s: want amqp://user:password@host:port/vhost or amqps://", MaskURL(d.URL.Reveal()))
		}
		if len(d.Exchange) > 255 {
			p.add(key("exchange"), "longer than 255 bytes")
		}
		if len(d.RoutingKey) > 255 {
			p.add(key("routing_key"), "longer than 255 bytes")
		}
	default:
		p.add(key("type"), "%q: want %s", d.Type, strings.Join(DestinationTypes, ", "))
	}
}

// checkSubject refuses a subject a nats destination cannot publish to.
func checkSubject(s string) error {
	if s == "" {
		return fmt.Errorf("required for a nats destination")
	}
	if strings.HasPrefix(s, "$") || strings.HasPrefix(s, "_INBOX.") || s == "_INBOX" || strings.HasPrefix(s, "hookjet.") || s == "hookjet" {
		return fmt.Errorf("%q is reserved (subjects under $, _INBOX. and hookjet. are refused)", s)
	}
	for _, tok := range strings.Split(s, ".") {
		switch {
		case tok == "":
			return fmt.Errorf("%q has an empty token", s)
		case tok == "*" || tok == ">":
			return fmt.Errorf("%q has a wildcard", s)
		case strings.ContainsAny(tok, " \t\r\n"):
			return fmt.Errorf("%q has white space", s)
		}
	}
	return nil
}

// checkTopic refuses a topic Kafka refuses, {type} and {tenant} aside.
func checkTopic(t string) error {
	if t == "" {
		return fmt.Errorf("required for a kafka destination")
	}
	bare := strings.NewReplacer("{type}", "", "{tenant}", "").Replace(t)
	if len(bare) > 249 {
		return fmt.Errorf("longer than 249 characters")
	}
	for _, c := range bare {
		if !topicChar(c) {
			return fmt.Errorf("%q has %q: a topic has [a-zA-Z0-9._-] only", t, c)
		}
	}
	return nil
}

// topicChar reports whether Kafka takes c in a topic name.
func topicChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

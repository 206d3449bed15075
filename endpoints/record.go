package endpoints

import (
	"time"

	"github.com/hookjet/hookjet/config"
)

// Record is an endpoint created through the admin API as the KV
// bucket HOOKJET_ENDPOINTS stores it under its id: its own definition (the
// settings it overrides, not resolved values, so that a change of the
// defaults reaches it) with signing secrets and header values sealed
// (AES-256-GCM with security.secret_key). jetstream's EndpointStore builds one
// from a [config.EndpointSpec] (Record) and opens it (Spec, Resolve); the
// admin API writes it through that store and the engine applies it.
type Record struct {
	// V is the version of this JSON form; 0 is read as 1.
	V int `json:"v"`
	// ID is the endpoint id, also the KV key.
	ID string `json:"id"`
	// URL is where a webhook's deliveries go. Every record has one or a
	// Destination; a value with neither is not an endpoint (the first
	// design kept disabled states here).
	URL string `json:"url"`
	// Destination is a broker destination with its credentials sealed;
	// nil for a webhook.
	Destination *Destination `json:"destination,omitempty"`
	// Events are the endpoint's patterns; nil means every event.
	Events []string `json:"events,omitempty"`
	// Tenant and Description are free text; empty means none.
	Tenant      string `json:"tenant,omitempty"`
	Description string `json:"description,omitempty"`
	Owner       string `json:"owner,omitempty"`
	// Filter is the endpoint's CEL filter and Transform its JavaScript
	// transform, as written (neither is a secret); empty means none.
	Filter    string `json:"filter,omitempty"`
	Transform string `json:"transform,omitempty"`
	// Headers maps extra header names to sealed values; nil means none.
	Headers map[string][]byte `json:"headers,omitempty"`
	// Secrets are the sealed signing secrets, newest first.
	Secrets []SealedSecret `json:"secrets"`
	// InsecureSkipVerify turns off TLS certificate verification.
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
	// Auth is the endpoint's auth (config.Auth's sealed form, every field
	// included) sealed with the context "<id>/auth"; nil means none.
	Auth []byte `json:"auth,omitempty"`
	// Proxy is the endpoint's proxy value ("none" or a URL, which may hold
	// a password) sealed with the context "<id>/proxy"; nil means the
	// default (security.egress_proxy).
	Proxy []byte `json:"proxy,omitempty"`
	// Overrides are the settings the endpoint sets itself.
	Overrides config.Overrides `json:"overrides"`
	// CreatedAt and UpdatedAt are set by the admin API (zero, and left out,
	// in the shared definitions of config-file endpoints).
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// Revision is the KV revision the record was read at; 0 when it was not
	// read from the bucket.
	Revision uint64 `json:"-"`
}

// Destination is a broker destination as stored: its fields, with the
// credentials (URL, token, password, SASL password) sealed together.
type Destination struct {
	Type          string                `json:"type"`
	Subject       string                `json:"subject,omitempty"`
	JetStream     *bool                 `json:"jetstream,omitempty"`
	Creds         string                `json:"creds,omitempty"`
	NKey          string                `json:"nkey,omitempty"`
	User          string                `json:"user,omitempty"`
	Brokers       []string              `json:"brokers,omitempty"`
	Topic         string                `json:"topic,omitempty"`
	SASLMechanism string                `json:"sasl_mechanism,omitempty"`
	SASLUser      string                `json:"sasl_user,omitempty"`
	Exchange      string                `json:"exchange,omitempty"`
	RoutingKey    string                `json:"routing_key,omitempty"`
	TLS           config.DestinationTLS `json:"tls,omitzero"`
	// Credentials are [Credentials] as JSON, sealed with the context
	// "<id>/destination".
	Credentials []byte `json:"credentials,omitempty"`
}

// Credentials are a destination's secret fields, sealed as one value.
type Credentials struct {
	URL          string `json:"url,omitempty"`
	Token        string `json:"token,omitempty"`
	Password     string `json:"password,omitempty"`
	SASLPassword string `json:"sasl_password,omitempty"`
}

// StoredDestination returns d's stored form but for its sealed
// credentials, and the credentials to seal; nil for a webhook.
func StoredDestination(d config.Destination) (*Destination, Credentials) {
	if d.IsWebhook() {
		return nil, Credentials{}
	}
	return &Destination{
			Type: d.Type, Subject: d.Subject, JetStream: d.JetStream, Creds: d.Creds, NKey: d.NKey, User: d.User,
			Brokers: d.Brokers, Topic: d.Topic, SASLMechanism: d.SASL.Mechanism, SASLUser: d.SASL.User,
			Exchange: d.Exchange, RoutingKey: d.RoutingKey, TLS: d.TLS,
		}, Credentials{
			URL: d.URL.Reveal(), Token: d.Token.Reveal(), Password: d.Password.Reveal(), SASLPassword: d.SASL.Password.Reveal(),
		}
}

// Config returns the destination d stores, with its opened credentials c.
func (d *Destination) Config(c Credentials) config.Destination {
	if d == nil {
		return config.Destination{}
	}
	return config.Destination{
		Type: d.Type, URL: config.NewSecret(c.URL), Subject: d.Subject, JetStream: d.JetStream, Creds: d.Creds, NKey: d.NKey,
		Token: config.NewSecret(c.Token), User: d.User, Password: config.NewSecret(c.Password),
		Brokers: d.Brokers, Topic: d.Topic, SASL: config.SASL{Mechanism: d.SASLMechanism, User: d.SASLUser, Password: config.NewSecret(c.SASLPassword)},
		Exchange: d.Exchange, RoutingKey: d.RoutingKey, TLS: d.TLS,
	}
}

// SealedSecret is one sealed signing secret.
type SealedSecret struct {
	// Sealed is the secret sealed with the context "<id>/secrets".
	Sealed []byte `json:"sealed"`
	// Expires is when a rotated-out secret stops signing; nil means never.
	Expires *time.Time `json:"expires,omitempty"`
}

// DropExpiredSecrets returns spec without the secrets whose expiry is at or
// before now.
func DropExpiredSecrets(spec config.EndpointSpec, now time.Time) config.EndpointSpec {
	var secrets []config.Secret
	var expiry []time.Time
	for i, sec := range spec.Secrets {
		var exp time.Time
		if i < len(spec.SecretExpiry) {
			exp = spec.SecretExpiry[i]
		}
		if !exp.IsZero() && !exp.After(now) {
			continue
		}
		secrets = append(secrets, sec)
		expiry = append(expiry, exp)
	}
	spec.Secrets, spec.SecretExpiry = secrets, expiry
	return spec
}

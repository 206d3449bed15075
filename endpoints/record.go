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
	// URL is where deliveries go. Every record has one; a value without it
	// is not an endpoint (the first design kept disabled states here).
	URL string `json:"url"`
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

package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/signature"
)

// Inbound configures the inbound gateway: webhooks that providers (payments,
// source control, shops) send to hookjet, verified and stored in the
// HOOKJET_INBOUND stream before they are acknowledged.
type Inbound struct {
	// Listen is the gateway's address ("0.0.0.0:8090"), separate from the
	// admin API. Empty (the default) means no gateway.
	Listen string `yaml:"listen"`
	// MaxBodyBytes caps a request body, 1 byte..16 MiB; a larger one is
	// answered 413. Default 1 MiB.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// Sources are the providers the gateway accepts, each at
	// POST /in/<id>. Nil means none.
	Sources []InboundSource `yaml:"sources"`
}

// InboundSource is one provider sending webhooks to the gateway.
type InboundSource struct {
	// ID names the source in the URL (/in/<id>), the subject and the
	// metrics: [a-z0-9_-]+, at most 64 characters, unique.
	ID string `yaml:"id"`
	// Scheme is how requests are signed: standard, stripe, github, shopify
	// or hmac.
	Scheme string `yaml:"scheme"`
	// Secrets are the signing secrets; a request signed with any of them is
	// accepted, so that a provider's secret rotates without downtime. At
	// least one. For scheme standard they are "whsec_<base64>"; for the
	// others the secret string as the provider shows it (Stripe's whsec_...
	// is used as is, as Stripe does).
	Secrets []Secret `yaml:"secrets"`
	// Tolerance is how far a signed timestamp may lie from now (schemes
	// standard and stripe). Zero means DefaultInboundTolerance.
	Tolerance time.Duration `yaml:"tolerance"`
	// Header is the signature header of scheme hmac (required there).
	Header string `yaml:"header"`
	// Algorithm is the HMAC hash of scheme hmac: sha256 (the default when
	// empty), sha1 or sha512.
	Algorithm string `yaml:"algorithm"`
	// Encoding is how scheme hmac writes the MAC: hex (the default when
	// empty) or base64.
	Encoding string `yaml:"encoding"`
	// Prefix precedes the MAC in the header of scheme hmac ("sha256=");
	// empty means none.
	Prefix string `yaml:"prefix"`
	// IDHeader names the header carrying the provider's event id (scheme
	// hmac); empty means the id is derived from the body's SHA-256.
	IDHeader string `yaml:"id_header"`
	// TypeHeader names the header carrying the event type (scheme hmac);
	// empty means the type "untyped".
	TypeHeader string `yaml:"type_header"`
}

// Inbound defaults and schemes.
const (
	DefaultInboundMaxBody   = 1 << 20
	DefaultInboundTolerance = 5 * time.Minute
	maxInboundBody          = 16 << 20
	maxInboundTolerance     = 24 * time.Hour
	maxInboundSources       = 1000
)

// Inbound signature schemes.
const (
	SchemeStandard = "standard"
	SchemeStripe   = "stripe"
	SchemeGitHub   = "github"
	SchemeShopify  = "shopify"
	SchemeHMAC     = "hmac"
)

// inboundSourcesType is skipped by the environment overrides: a list of
// mappings has no single-variable form.
var inboundSourcesType = reflect.TypeFor[[]InboundSource]()

func defaultInbound() Inbound { return Inbound{MaxBodyBytes: DefaultInboundMaxBody} }

// Window returns the source's timestamp tolerance: Tolerance, or
// [DefaultInboundTolerance] when it is zero.
func (s InboundSource) Window() time.Duration {
	if s.Tolerance == 0 {
		return DefaultInboundTolerance
	}
	return s.Tolerance
}

// validateInbound checks the inbound section, naming each key.
func (c *Config) validateInbound(p *problems) {
	in := c.Inbound
	if in.Listen != "" {
		if err := checkHostPort(in.Listen); err != nil {
			p.add("inbound.listen", "%w", err)
		} else if in.Listen == c.Admin.Listen && !strings.HasSuffix(in.Listen, ":0") {
			p.add("inbound.listen", "must differ from admin.listen (%s): the gateway faces providers, the admin API operators", c.Admin.Listen)
		}
	}
	if in.MaxBodyBytes < 1 || in.MaxBodyBytes > maxInboundBody {
		p.add("inbound.max_body_bytes", "must be between 1 and %d, got %d", maxInboundBody, in.MaxBodyBytes)
	}
	if len(in.Sources) > maxInboundSources {
		p.add("inbound.sources", "at most %d sources, got %d", maxInboundSources, len(in.Sources))
	}
	seen := make(map[string]int, len(in.Sources))
	for i, s := range in.Sources {
		prefix := "inbound.sources[" + strconv.Itoa(i) + "]"
		if err := checkID(s.ID); err != nil {
			p.add(prefix+".id", "%w", err)
		} else if j, dup := seen[s.ID]; dup {
			p.add(prefix+".id", "%q is already the id of inbound.sources[%d]", s.ID, j)
		} else {
			seen[s.ID] = i
		}
		validateInboundSource(p, prefix, s)
	}
}

// validateInboundSource checks one source's scheme, secrets, tolerance and
// hmac options. Errors never contain a secret.
func validateInboundSource(p *problems, prefix string, s InboundSource) {
	switch s.Scheme {
	case SchemeStandard, SchemeStripe, SchemeGitHub, SchemeShopify, SchemeHMAC:
	case "":
		p.add(prefix+".scheme", "is required: standard, stripe, github, shopify or hmac")
	default:
		p.add(prefix+".scheme", "must be standard, stripe, github, shopify or hmac, got %q", s.Scheme)
	}
	if len(s.Secrets) == 0 {
		p.add(prefix+".secrets", "at least one secret is required")
	}
	for j, sec := range s.Secrets {
		key := prefix + ".secrets[" + strconv.Itoa(j) + "]"
		switch {
		case sec.IsZero():
			p.add(key, "must not be empty")
		case s.Scheme == SchemeStandard:
			if _, err := signature.DecodeSecret(sec.Reveal()); err != nil {
				p.add(key, "%w", err)
			}
		}
	}
	if s.Tolerance < 0 {
		p.add(prefix+".tolerance", "must not be negative, got %s (a negative window would refuse every request)", s.Tolerance)
	}
	if s.Tolerance > maxInboundTolerance {
		p.add(prefix+".tolerance", "must be at most %s, got %s", maxInboundTolerance, s.Tolerance)
	}
	if s.Scheme != SchemeHMAC {
		for _, kv := range [][2]string{{"header", s.Header}, {"algorithm", s.Algorithm}, {"encoding", s.Encoding}, {"prefix", s.Prefix}, {"id_header", s.IDHeader}, {"type_header", s.TypeHeader}} {
			if kv[1] != "" {
				p.add(prefix+"."+kv[0], "applies to scheme hmac only (this source's scheme is %q)", s.Scheme)
			}
		}
		return
	}
	if s.Header == "" {
		p.add(prefix+".header", "is required with scheme hmac: the header carrying the signature")
	} else if !validHeaderName(s.Header) {
		p.add(prefix+".header", "%q is not a valid header name", s.Header)
	}
	switch s.Algorithm {
	case "", "sha256", "sha1", "sha512":
	default:
		p.add(prefix+".algorithm", "must be sha256, sha1 or sha512, got %q", s.Algorithm)
	}
	switch s.Encoding {
	case "", "hex", "base64":
	default:
		p.add(prefix+".encoding", "must be hex or base64, got %q", s.Encoding)
	}
	for _, kv := range [][2]string{{"id_header", s.IDHeader}, {"type_header", s.TypeHeader}} {
		if kv[1] != "" && !validHeaderName(kv[1]) {
			p.add(prefix+"."+kv[0], "%q is not a valid header name", kv[1])
		}
	}
}

// String describes the source without its secrets.
func (s InboundSource) String() string {
	return fmt.Sprintf("inbound source %s (%s, %d secrets)", s.ID, s.Scheme, len(s.Secrets))
}

package destination

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/signature"
)

// Header names of a broker message besides the Standard Webhooks ones
// (signature.HeaderID, HeaderTimestamp, HeaderSignature), written as here.
const (
	HeaderEventType   = "Hookjet-Event-Type"
	HeaderTenant      = "Hookjet-Tenant"
	HeaderOrderingKey = "Hookjet-Ordering-Key"
)

// NoTenant is what {tenant} becomes in a subject, topic or routing key
// when the event names no tenant.
const NoTenant = "_"

// Header is one header of a broker message.
type Header struct {
	Name, Value string
}

// MessageHeaders returns the headers of a broker message carrying r, sent
// at sent and signed by signer (Standard Webhooks over r.Payload, as a
// webhook's body): webhook-id, webhook-timestamp, webhook-signature (when
// signer has keys), Hookjet-Event-Type, then Hookjet-Tenant,
// Hookjet-Ordering-Key where set, then r.Trace's headers.
func MessageHeaders(signer *signature.Signer, r *Request, sent time.Time) []Header {
	ts := sent.Unix()
	h := make([]Header, 0, 6+len(r.Trace))
	h = append(h,
		Header{signature.HeaderID, r.EventID},
		Header{signature.HeaderTimestamp, strconv.FormatInt(ts, 10)})
	if signer != nil && signer.Len() > 0 {
		h = append(h, Header{signature.HeaderSignature, signer.Sign(r.EventID, ts, r.Payload)})
	}
	h = append(h, Header{HeaderEventType, r.EventType})
	if r.Tenant != "" {
		h = append(h, Header{HeaderTenant, r.Tenant})
	}
	if r.OrderingKey != "" {
		h = append(h, Header{HeaderOrderingKey, r.OrderingKey})
	}
	for k, vs := range r.Trace {
		for _, v := range vs {
			h = append(h, Header{strings.ToLower(k), v})
		}
	}
	return h
}

// Expand returns template (a subject, topic or routing key) with {type}
// replaced by r's event type and {tenant} by its tenant ([NoTenant] when
// it names none).
func Expand(template string, r *Request) string {
	if !strings.Contains(template, "{") {
		return template
	}
	tenant := r.Tenant
	if tenant == "" {
		tenant = NoTenant
	}
	// A scan, not a strings.Replacer: building one per message took
	// nearly half of what preparing a NATS publish cost.
	var b strings.Builder
	b.Grow(len(template) + len(r.EventType) + len(tenant))
	for {
		i := strings.IndexByte(template, '{')
		if i < 0 {
			b.WriteString(template)
			return b.String()
		}
		b.WriteString(template[:i])
		switch rest := template[i:]; {
		case strings.HasPrefix(rest, "{type}"):
			b.WriteString(r.EventType)
			template = rest[len("{type}"):]
		case strings.HasPrefix(rest, "{tenant}"):
			b.WriteString(tenant)
			template = rest[len("{tenant}"):]
		default:
			b.WriteByte('{')
			template = rest[1:]
		}
	}
}

// TLS is a broker connection's TLS settings; the zero value with Enabled
// false means none.
type TLS struct {
	// Enabled turns TLS on (implied by any other field).
	Enabled bool `json:"enabled,omitempty"`
	// CAFile is a PEM file of the certificate authorities trusted; empty
	// means the system's.
	CAFile string `json:"ca_file,omitempty"`
	// CertFile and KeyFile are a client certificate and its key (PEM);
	// empty means none.
	CertFile string `json:"cert_file,omitempty"`
	KeyFile  string `json:"key_file,omitempty"`
	// InsecureSkipVerify turns certificate verification off.
	InsecureSkipVerify bool `json:"insecure_skip_verify,omitempty"`
}

// On reports whether TLS is used.
func (t *TLS) On() bool {
	return t != nil && (t.Enabled || t.CAFile != "" || t.CertFile != "" || t.InsecureSkipVerify)
}

// Config returns t's tls.Config for serverName, nil when TLS is off.
func (t *TLS) Config(serverName string) (*tls.Config, error) {
	if !t.On() {
		return nil, nil
	}
	c := &tls.Config{ServerName: serverName, MinVersion: tls.VersionTLS12, InsecureSkipVerify: t.InsecureSkipVerify} //nolint:gosec // the endpoint's choice, warned about
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, errors.New("tls.ca_file: no PEM certificate")
		}
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file: %w", err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c, nil
}

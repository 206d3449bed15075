package reach

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
)

// The types of [Auth].
const (
	// Basic is HTTP basic authentication (RFC 7617).
	Basic = "basic"
	// Bearer is a static bearer token (RFC 6750).
	Bearer = "bearer"
	// OAuth2 is a token from an OAuth2 client credentials grant (RFC 6749
	// section 4.4), sent as a bearer token.
	OAuth2 = "oauth2"
	// MTLS is a TLS client certificate.
	MTLS = "mtls"
)

// Types lists the types of [Auth], in the order the documentation gives them.
var Types = []string{Basic, Bearer, OAuth2, MTLS}

// Auth is how an endpoint's requests prove who sends them. The zero value
// (Type empty) means none. Which fields count depends on Type: Username
// and Password for [Basic], Token for [Bearer], TokenURL, ClientID,
// ClientSecret, Scopes and Audience for [OAuth2], Cert and Key for [MTLS].
//
// Every printed form of an Auth (fmt verbs, log/slog, encoding/json) shows
// its type alone.
type Auth struct {
	// Type is "", [Basic], [Bearer], [OAuth2] or [MTLS].
	Type string
	// Username and Password are basic authentication's.
	Username, Password string
	// Token is the bearer token.
	Token string
	// TokenURL is the OAuth2 token endpoint, https:// (or http://).
	TokenURL string
	// ClientID and ClientSecret identify hookjet to the token endpoint.
	ClientID, ClientSecret string
	// Scopes are the scopes asked for; nil asks for none.
	Scopes []string
	// Audience, when not empty, is sent as the token request's audience
	// parameter (Auth0, Okta and others ask for it).
	Audience string
	// Cert and Key are the PEM client certificate (with its chain) and
	// private key.
	Cert, Key string
}

// IsZero reports whether a is no authentication.
func (a Auth) IsZero() bool { return a.Type == "" }

// String returns "auth(<type>)", or "auth(none)".
func (a Auth) String() string {
	if a.Type == "" {
		return "auth(none)"
	}
	return "auth(" + a.Type + ")"
}

// GoString returns what String does, so %#v shows no secret.
func (a Auth) GoString() string { return a.String() }

// Format writes what String does for every verb.
func (a Auth) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, a.String()) }

// LogValue implements [slog.LogValuer]: the type alone.
func (a Auth) LogValue() slog.Value { return slog.StringValue(a.Type) }

// MarshalJSON writes {"type": "<type>"}: never a secret.
func (a Auth) MarshalJSON() ([]byte, error) {
	return []byte(`{"type":"` + a.Type + `"}`), nil
}

// maxField bounds each text field of an Auth (a PEM chain fits easily).
const maxField = 64 << 10

// Check returns the problems of a, an errors.Join of [*FieldError] named
// by the field ("type", "username", "token_url", "cert"), or nil. It
// parses an mTLS certificate and key and checks that they match. Its
// errors never contain a secret.
func (a Auth) Check() error {
	var errs []error
	fail := func(field, format string, args ...any) {
		errs = append(errs, &FieldError{Field: field, Err: fmt.Errorf(format, args...)})
	}
	need := func(field, v string) {
		switch {
		case v == "":
			fail(field, "is required for auth type %q", a.Type)
		case len(v) > maxField:
			fail(field, "must be at most %d bytes, got %d", maxField, len(v))
		case strings.ContainsAny(v, "\r\n") && field != "cert" && field != "key":
			fail(field, "must not contain a line break")
		}
	}
	// unused lists the fields set that a's type does not use.
	unused := func(used ...string) {
		set := map[string]bool{
			"username": a.Username != "", "password": a.Password != "", "token": a.Token != "",
			"token_url": a.TokenURL != "", "client_id": a.ClientID != "", "client_secret": a.ClientSecret != "",
			"scopes": len(a.Scopes) > 0, "audience": a.Audience != "", "cert": a.Cert != "", "key": a.Key != "",
		}
		for _, f := range used {
			delete(set, f)
		}
		for _, f := range []string{"username", "password", "token", "token_url", "client_id", "client_secret", "scopes", "audience", "cert", "key"} {
			if set[f] {
				fail(f, "is not a field of auth type %q", a.Type)
			}
		}
	}
	switch a.Type {
	case "":
		unused()
	case Basic:
		need("username", a.Username)
		need("password", a.Password)
		if strings.Contains(a.Username, ":") {
			fail("username", "must not contain a colon (RFC 7617)")
		}
		unused("username", "password")
	case Bearer:
		need("token", a.Token)
		unused("token")
	case OAuth2:
		need("token_url", a.TokenURL)
		if a.TokenURL != "" {
			if err := checkTokenURL(a.TokenURL); err != nil {
				fail("token_url", "%w", err)
			}
		}
		need("client_id", a.ClientID)
		need("client_secret", a.ClientSecret)
		for i, s := range a.Scopes {
			if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
				fail(fmt.Sprintf("scopes[%d]", i), "must be a scope token without spaces or quotes")
			}
		}
		if strings.ContainsAny(a.Audience, "\r\n") {
			fail("audience", "must not contain a line break")
		}
		unused("token_url", "client_id", "client_secret", "scopes", "audience")
	case MTLS:
		need("cert", a.Cert)
		need("key", a.Key)
		if a.Cert != "" && a.Key != "" && len(errs) == 0 {
			if _, err := tls.X509KeyPair([]byte(a.Cert), []byte(a.Key)); err != nil {
				fail("cert", "with key: not a PEM certificate and its matching private key (%s)", pemProblem(err))
			}
		}
		unused("cert", "key")
	default:
		fail("type", "must be one of %s, got %q", strings.Join(Types, ", "), a.Type)
	}
	return errors.Join(errs...)
}

// pemProblem describes a tls.X509KeyPair error without quoting the PEM.
func pemProblem(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "tls: ")
	if len(msg) > 120 {
		msg = msg[:120]
	}
	return msg
}

// checkTokenURL checks an OAuth2 token endpoint's URL.
func checkTokenURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return errors.New("must be an https:// or http:// URL")
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return errors.New("must be an https:// or http:// URL")
	}
	if u.Host == "" {
		return errors.New("must name a host")
	}
	if u.User != nil {
		return errors.New("must not hold credentials: use client_id and client_secret")
	}
	if u.Fragment != "" {
		return errors.New("must not have a fragment")
	}
	return nil
}

// Credentials are one endpoint's opened [Auth], safe for concurrent use.
// The zero value, like a nil *Credentials, adds nothing.
type Credentials struct {
	typ    string
	header []string // Authorization of basic and bearer
	token  *tokenSource
	cert   *tls.Certificate
}

// Open returns the credentials of a, which must pass [Auth.Check] (Open
// checks it again). client fetches OAuth2 tokens: the caller's guarded,
// proxied transport, which must not follow redirects; nil means
// http.DefaultClient, which a caller other than a test should not use.
func Open(a Auth, client *http.Client, opts ...Option) (*Credentials, error) {
	if err := a.Check(); err != nil {
		return nil, err
	}
	c := &Credentials{typ: a.Type}
	switch a.Type {
	case Basic:
		req := http.Request{Header: http.Header{}}
		req.SetBasicAuth(a.Username, a.Password)
		c.header = req.Header["Authorization"]
	case Bearer:
		c.header = []string{"Bearer " + a.Token}
	case OAuth2:
		c.token = newTokenSource(a, client, opts...)
	case MTLS:
		cert, err := tls.X509KeyPair([]byte(a.Cert), []byte(a.Key))
		if err != nil { // Check parsed it
			return nil, &FieldError{Field: "cert", Err: errors.New("not a PEM certificate and its matching private key")}
		}
		c.cert = &cert
	}
	return c, nil
}

// Type returns the type of the credentials' [Auth]; "" for none.
func (c *Credentials) Type() string {
	if c == nil {
		return ""
	}
	return c.typ
}

// Certificate returns the TLS client certificate of an [MTLS] auth; nil
// for every other type.
func (c *Credentials) Certificate() *tls.Certificate {
	if c == nil {
		return nil
	}
	return c.cert
}

// Refreshes reports whether [Credentials.Drop] can give a request other
// credentials: an [OAuth2] token can be fetched again.
func (c *Credentials) Refreshes() bool { return c != nil && c.token != nil }

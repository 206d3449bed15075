package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/hookjet/hookjet/reach"
)

// Auth is how an endpoint's requests authenticate (key "auth"). The zero
// value (Type empty) is none. Its secrets (password, token,
// client_secret, cert, key) take the env:/file: forms in the config file
// only; cert and key there may also be a file path. Through the admin API
// they are the values themselves: cert and key in PEM.
type Auth struct {
	// Type is "basic", "bearer", "oauth2" or "mtls"; empty means none.
	Type string `yaml:"type"`
	// Username and Password are basic authentication's.
	Username string `yaml:"username"`
	Password Secret `yaml:"password"`
	// Token is the bearer token.
	Token Secret `yaml:"token"`
	// TokenURL, ClientID, ClientSecret, Scopes and Audience are the OAuth2
	// client credentials grant's; Scopes nil asks for none, Audience empty
	// sends none.
	TokenURL     string   `yaml:"token_url"`
	ClientID     string   `yaml:"client_id"`
	ClientSecret Secret   `yaml:"client_secret"`
	Scopes       []string `yaml:"scopes"`
	Audience     string   `yaml:"audience"`
	// Cert and Key are the PEM client certificate (with its chain) and
	// private key of mTLS.
	Cert Secret `yaml:"cert"`
	Key  Secret `yaml:"key"`
}

// IsZero reports whether a is no authentication.
func (a Auth) IsZero() bool {
	return a.Type == "" && a.Username == "" && a.Password.IsZero() && a.Token.IsZero() && a.TokenURL == "" &&
		a.ClientID == "" && a.ClientSecret.IsZero() && a.Scopes == nil && a.Audience == "" && a.Cert.IsZero() && a.Key.IsZero()
}

// Reach returns a as package reach (and the engine's destinations) take it.
func (a Auth) Reach() reach.Auth {
	return reach.Auth{
		Type: a.Type, Username: a.Username, Password: a.Password.Reveal(), Token: a.Token.Reveal(),
		TokenURL: a.TokenURL, ClientID: a.ClientID, ClientSecret: a.ClientSecret.Reveal(),
		Scopes: a.Scopes, Audience: a.Audience, Cert: a.Cert.Reveal(), Key: a.Key.Reveal(),
	}
}

// authJSON is Auth's JSON form, secrets included: the admin API's input
// and, sealed, what the endpoint bucket stores.
type authJSON struct {
	Type         string   `json:"type"`
	Username     string   `json:"username,omitempty"`
	Password     string   `json:"password,omitempty"`
	Token        string   `json:"token,omitempty"`
	TokenURL     string   `json:"token_url,omitempty"`
	ClientID     string   `json:"client_id,omitempty"`
	ClientSecret string   `json:"client_secret,omitempty"`
	Scopes       []string `json:"scopes,omitempty"`
	Audience     string   `json:"audience,omitempty"`
	Cert         string   `json:"cert,omitempty"`
	Key          string   `json:"key,omitempty"`
}

// stringFields are j's string fields by their JSON names: what an API
// request may set, one way for each.
func (j *authJSON) stringFields() map[string]*string {
	return map[string]*string{
		"type": &j.Type, "username": &j.Username, "password": &j.Password, "token": &j.Token, "token_url": &j.TokenURL,
		"client_id": &j.ClientID, "client_secret": &j.ClientSecret, "audience": &j.Audience, "cert": &j.Cert, "key": &j.Key,
	}
}

// SealedForm returns a's JSON form with its secrets, to be sealed at rest;
// never to be shown. [OpenAuth] reads it back.
func (a Auth) SealedForm() []byte {
	r := a.Reach()
	b, _ := json.Marshal(authJSON{r.Type, r.Username, r.Password, r.Token, r.TokenURL, r.ClientID, r.ClientSecret, r.Scopes, r.Audience, r.Cert, r.Key}) // strings only: cannot fail
	return b
}

// OpenAuth reads what [Auth.SealedForm] wrote.
func OpenAuth(b []byte) (Auth, error) {
	var j authJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return Auth{}, errors.New("not an auth object")
	}
	return j.auth(), nil
}

func (j authJSON) auth() Auth {
	return Auth{
		Type: j.Type, Username: j.Username, Password: NewSecret(j.Password), Token: NewSecret(j.Token),
		TokenURL: j.TokenURL, ClientID: j.ClientID, ClientSecret: NewSecret(j.ClientSecret),
		Scopes: j.Scopes, Audience: j.Audience, Cert: NewSecret(j.Cert), Key: NewSecret(j.Key),
	}
}

// authSecretFields are the fields of an auth whose values are secrets.
var authSecretFields = []string{"password", "token", "client_secret", "cert", "key"}

// decodeAuth decodes the admin API's "auth": an object of strings (and
// "scopes", a list), or null for none. env:/file: forms and file paths
// are the config file's alone: refused here.
func (d *patchDecoder) decodeAuth(raw json.RawMessage) *Auth {
	if isNull(raw) {
		return &Auth{}
	}
	var obj map[string]json.RawMessage
	if err := strict(raw, &obj, `an object such as {"type": "bearer", "token": "..."}`); err != nil {
		d.fail("auth", err)
		return nil
	}
	var j authJSON
	fields := j.stringFields()
	ok := true
	for name, v := range obj {
		key := "auth." + name
		if name == "scopes" {
			if err := strict(v, &j.Scopes, "a list of strings"); err != nil {
				d.fail(key, err)
				ok = false
			}
			continue
		}
		field := fields[name]
		if field == nil {
			d.fail(key, errors.New("unknown field"))
			ok = false
			continue
		}
		if err := strict(v, field, "a string"); err != nil {
			d.fail(key, err)
			ok = false
		}
	}
	for _, f := range authSecretFields {
		v := *fields[f]
		if isReference(v) {
			d.fail("auth."+f, errors.New("env: and file: forms are the config file's alone: give the value itself"))
			ok = false
		}
		if (f == "cert" || f == "key") && v != "" && !isReference(v) && !strings.HasPrefix(strings.TrimSpace(v), "-----BEGIN ") {
			d.fail("auth."+f, errors.New("must be PEM (-----BEGIN ...); file paths are the config file's alone"))
			ok = false
		}
	}
	if !ok {
		return nil
	}
	a := j.auth()
	return &a
}

// validateAuth checks an endpoint's auth and its Authorization header,
// naming each field under key ("auth.token_url").
func validateAuth(p *problems, key, headersKey string, a Auth, headers map[string]Secret) {
	if a.IsZero() {
		return
	}
	if err := a.Reach().Check(); err != nil {
		for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
			if fe, ok := errors.AsType[*reach.FieldError](e); ok {
				p.add(key+"."+fe.Field, "%w", fe.Err)
			} else {
				p.add(key, "%w", e)
			}
		}
	}
	if a.Type != reach.MTLS {
		for name := range headers {
			if strings.EqualFold(name, "Authorization") {
				p.add(headersKey+"."+name, "is set by auth (%s): configure one or the other", a.Type)
			}
		}
	}
}

// checkProxy checks an endpoint's proxy: empty, "none" or an http:// URL.
func checkProxy(s string) error {
	if s == "" || s == reach.None {
		return nil
	}
	_, err := reach.ParseProxy(s)
	return err
}

// RedactedProxy returns a proxy value as it may be shown: its password
// replaced by "xxxxx".
func RedactedProxy(s string) string {
	if s == "" || s == reach.None {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "[invalid]"
	}
	return u.Redacted()
}

// readPEMPaths makes an mTLS cert or key given as a file path in the
// config file its content (env: and file: are resolved already).
func readPEMPaths(p *problems, key string, a *Auth, readFile func(string) (string, error)) {
	if a.Type != reach.MTLS || readFile == nil {
		return
	}
	for _, f := range []struct {
		name string
		v    *Secret
	}{{"cert", &a.Cert}, {"key", &a.Key}} {
		v := strings.TrimSpace(f.v.Reveal())
		if v == "" || strings.HasPrefix(v, "-----BEGIN ") {
			continue
		}
		b, err := readFile(v)
		if err != nil {
			p.add(key+"."+f.name, "%w", fmt.Errorf("not PEM, and not a readable file: %w", err))
			continue
		}
		*f.v = NewSecret(b)
	}
}

package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testPEM returns a self-signed certificate and its key in PEM.
func testPEM(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "c"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})), string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}))
}

// TestEndpointAuthJSON: the admin API's auth and proxy, each problem
// named by its field and never quoting a secret; env:, file: and paths
// refused.
func TestEndpointAuthJSON(t *testing.T) {
	const ok = `"id":"a","url":"https://a.example.com/","secrets":["` + secretA + `"]`
	cert, key := testPEM(t)
	for _, tt := range []struct {
		name, body, field, reason string
	}{
		{"basic", `{` + ok + `,"auth":{"type":"basic","username":"u","password":"TOPSECRET"}}`, "", ""},
		{"bearer", `{` + ok + `,"auth":{"type":"bearer","token":"TOPSECRET"}}`, "", ""},
		{"oauth2", `{` + ok + `,"auth":{"type":"oauth2","token_url":"https://id.example/token","client_id":"c","client_secret":"TOPSECRET","scopes":["a"],"audience":"x"}}`, "", ""},
		{"mtls", `{` + ok + `,"auth":{"type":"mtls","cert":` + quote(cert) + `,"key":` + quote(key) + `}}`, "", ""},
		{"proxy", `{` + ok + `,"proxy":"http://proxy.internal:3128"}`, "", ""},
		{"proxy none", `{` + ok + `,"proxy":"none"}`, "", ""},
		{"unknown type", `{` + ok + `,"auth":{"type":"digest"}}`, "auth.type", "must be one of"},
		{"missing token", `{` + ok + `,"auth":{"type":"bearer"}}`, "auth.token", "is required"},
		{"unknown field", `{` + ok + `,"auth":{"type":"bearer","token":"TOPSECRET","tokn":"x"}}`, "auth.tokn", "unknown field"},
		{"env form", `{` + ok + `,"auth":{"type":"bearer","token":"env:TOPSECRET"}}`, "auth.token", "config file's alone"},
		{"file form", `{` + ok + `,"auth":{"type":"oauth2","token_url":"https://id.example/token","client_id":"c","client_secret":"file:/etc/TOPSECRET"}}`, "auth.client_secret", "config file's alone"},
		{"cert path", `{` + ok + `,"auth":{"type":"mtls","cert":"/etc/TOPSECRET.pem","key":` + quote(key) + `}}`, "auth.cert", "must be PEM"},
		{"bad token url", `{` + ok + `,"auth":{"type":"oauth2","token_url":"ftp://x","client_id":"c","client_secret":"TOPSECRET"}}`, "auth.token_url", "https://"},
		{"auth and Authorization", `{` + ok + `,"headers":{"Authorization":"TOPSECRET"},"auth":{"type":"bearer","token":"TOPSECRET"}}`, "headers.Authorization", "is set by auth"},
		{"forged event type", `{` + ok + `,"headers":{"Hookjet-Event-Type":"x"}}`, "headers.Hookjet-Event-Type", "set by hookjet"},
		{"bad proxy", `{` + ok + `,"proxy":"socks5://TOPSECRET@x:1"}`, "proxy", "http://"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ep, err := resolveJSON(tt.body)
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(tt.body, `"auth"`) && ep.Auth.Type == "" {
					t.Error("auth not kept")
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %s: %s", tt.field, tt.reason)
			}
			field, reason := firstField(t, err)
			if field != tt.field || !strings.Contains(reason, tt.reason) {
				t.Errorf("%s: %s, want %s: ...%s...", field, reason, tt.field, tt.reason)
			}
			if strings.Contains(err.Error(), "TOPSECRET") {
				t.Errorf("error %q shows a secret", err)
			}
		})
	}
}

// TestEndpointAuthPatch: auth is replaced as a whole, null removes it.
func TestEndpointAuthPatch(t *testing.T) {
	spec := EndpointSpec{Auth: Auth{Type: "bearer", Token: NewSecret("t1")}, Proxy: "none"}
	p, err := DecodeEndpointPatch([]byte(`{"auth":{"type":"basic","username":"u","password":"p"}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := p.Apply(spec)
	if got.Auth.Type != "basic" || !got.Auth.Token.IsZero() || got.Proxy != "none" {
		t.Errorf("after a patch: %v, proxy %q", got.Auth, got.Proxy)
	}
	p, err = DecodeEndpointPatch([]byte(`{"auth":null,"proxy":null}`))
	if err != nil {
		t.Fatal(err)
	}
	if got = p.Apply(got); !got.Auth.IsZero() || got.Proxy != "" {
		t.Errorf("null: %+v, proxy %q, want none", got.Auth, got.Proxy)
	}
}

// TestAuthSealedFormRoundTrip: what the bucket stores (sealed) reads back.
func TestAuthSealedFormRoundTrip(t *testing.T) {
	a := Auth{Type: "oauth2", TokenURL: "https://id.example/token", ClientID: "c", ClientSecret: NewSecret("s"), Scopes: []string{"a", "b"}, Audience: "x"}
	b, err := OpenAuth(a.SealedForm())
	if err != nil {
		t.Fatal(err)
	}
	if b.Reach().ClientSecret != "s" || b.TokenURL != a.TokenURL || len(b.Scopes) != 2 || b.Audience != "x" {
		t.Errorf("round trip: %+v", b.Reach())
	}
}

// TestEndpointAuthFile: the config file resolves env:, file: and PEM paths.
func TestEndpointAuthFile(t *testing.T) {
	cert, key := testPEM(t)
	dir := t.TempDir()
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	for p, v := range map[string]string{certPath: cert, keyPath: key} {
		if err := os.WriteFile(p, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	yml := `
security:
  egress_proxy: http://proxy.internal:3128
endpoints:
  - id: o
    url: https://a.example.com/
    secrets: [` + secretA + `]
    auth: {type: oauth2, token_url: "https://id.example/token", client_id: c, client_secret: "env:CS"}
  - id: m
    url: https://b.example.com/
    secrets: [` + secretA + `]
    proxy: none
    auth: {type: mtls, cert: ` + certPath + `, key: "file:` + keyPath + `"}
`
	c, err := Parse([]byte(yml), func(k string) string {
		if k == "CS" {
			return "from-env"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Security.EgressProxy != "http://proxy.internal:3128" {
		t.Errorf("egress_proxy = %q", c.Security.EgressProxy)
	}
	if got := c.Endpoints[0].Auth.ClientSecret.Reveal(); got != "from-env" {
		t.Errorf("client_secret = %q, want the environment's", got)
	}
	m := c.Endpoints[1]
	if m.Proxy != "none" || !strings.HasPrefix(m.Auth.Cert.Reveal(), "-----BEGIN CERTIFICATE") || !strings.HasPrefix(m.Auth.Key.Reveal(), "-----BEGIN EC PRIVATE KEY") {
		t.Errorf("mtls endpoint: proxy %q, auth %v", m.Proxy, m.Auth)
	}

	_, err = Parse([]byte(`
security: {egress_proxy: "https://p:1"}
endpoints:
  - id: o
    url: https://a.example.com/
    secrets: [`+secretA+`]
    auth: {type: basic, username: u}
`), nil)
	for _, want := range []string{"security.egress_proxy", "endpoints[0].auth.password: is required"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(s, "\n", `\n`) + `"`
}

package reach

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
)

func TestAuthCheckNamesTheField(t *testing.T) {
	for _, tt := range []struct {
		name   string
		a      Auth
		fields []string // the fields named, in order
	}{
		{"none", Auth{}, nil},
		{"none with a field", Auth{Token: "x"}, []string{"token"}},
		{"unknown type", Auth{Type: "digest"}, []string{"type"}},
		{"basic", Auth{Type: Basic, Username: "u", Password: "p"}, nil},
		{"basic without password", Auth{Type: Basic, Username: "u"}, []string{"password"}},
		{"basic colon", Auth{Type: Basic, Username: "a:b", Password: "p"}, []string{"username"}},
		{"basic with token", Auth{Type: Basic, Username: "u", Password: "p", Token: "t"}, []string{"token"}},
		{"bearer", Auth{Type: Bearer, Token: "t"}, nil},
		{"bearer empty", Auth{Type: Bearer}, []string{"token"}},
		{"bearer line break", Auth{Type: Bearer, Token: "a\r\nX-Evil: 1"}, []string{"token"}},
		{"oauth2", Auth{Type: OAuth2, TokenURL: "https://id.example/token", ClientID: "c", ClientSecret: "s", Scopes: []string{"a", "b"}}, nil},
		{"oauth2 bad url", Auth{Type: OAuth2, TokenURL: "ftp://id.example/token", ClientID: "c", ClientSecret: "s"}, []string{"token_url"}},
		{"oauth2 url with user", Auth{Type: OAuth2, TokenURL: "https://u:p@id.example/token", ClientID: "c", ClientSecret: "s"}, []string{"token_url"}},
		{"oauth2 missing", Auth{Type: OAuth2}, []string{"token_url", "client_id", "client_secret"}},
		{"oauth2 bad scope", Auth{Type: OAuth2, TokenURL: "https://id.example/token", ClientID: "c", ClientSecret: "s", Scopes: []string{"a b"}}, []string{"scopes[0]"}},
		{"mtls missing", Auth{Type: MTLS}, []string{"cert", "key"}},
		{"mtls garbage", Auth{Type: MTLS, Cert: "not pem", Key: "secret-key-material"}, []string{"cert"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.a.Check()
			var got []string
			if err != nil {
				for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
					var fe *FieldError
					if !errors.As(e, &fe) {
						t.Fatalf("%v is not a *FieldError", e)
					}
					got = append(got, fe.Field)
				}
				if !errors.Is(err, ErrAuth) {
					t.Errorf("%v does not wrap ErrAuth", err)
				}
				for _, secret := range []string{"secret-key-material", "X-Evil", "u:p@"} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q shows a secret", err)
					}
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.fields) {
				t.Errorf("fields %v (%v), want %v", got, err, tt.fields)
			}
		})
	}
}

// TestAuthNeverPrinted checks every printed form of an Auth.
func TestAuthNeverPrinted(t *testing.T) {
	a := Auth{Type: OAuth2, TokenURL: "https://id.example/token", ClientID: "cid", ClientSecret: "TOPSECRET", Password: "TOPSECRET", Token: "TOPSECRET", Key: "TOPSECRET"}
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "auth", a)
	j, _ := json.Marshal(a)
	for _, s := range []string{fmt.Sprint(a), fmt.Sprintf("%v %+v %#v %s %q %d", a, a, a, a, a, a), buf.String(), string(j)} {
		if strings.Contains(s, "TOPSECRET") || strings.Contains(s, "cid") {
			t.Errorf("printed %q", s)
		}
		if !strings.Contains(s, "oauth2") {
			t.Errorf("printed %q: want the type", s)
		}
	}
}

func TestTokenErrorTemporary(t *testing.T) {
	for _, tt := range []struct {
		e    TokenError
		want bool
	}{
		{TokenError{Status: 400}, false},
		{TokenError{Status: 401}, false},
		{TokenError{Status: 403}, false},
		{TokenError{Status: 302}, false},
		{TokenError{Status: 408}, true},
		{TokenError{Status: 429}, true},
		{TokenError{Status: 500}, true},
		{TokenError{Status: 503}, true},
		{TokenError{Err: errors.New("connection refused")}, true},
		{TokenError{Err: errNoToken}, false},
	} {
		if got := tt.e.Temporary(); got != tt.want {
			t.Errorf("%v: Temporary() = %v, want %v", &tt.e, got, tt.want)
		}
	}
	e := &TokenError{Status: http.StatusUnauthorized, Code: "invalid_client", Description: "bad"}
	if got, want := e.Error(), "token endpoint answered HTTP 401 Unauthorized: invalid_client (bad)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestParseProxy(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{"http://proxy.internal:3128", true},
		{"http://user:pw@proxy.internal:3128", true},
		{"http://10.0.0.1", true},
		{"https://proxy.internal:3128", false},
		{"socks5://proxy.internal:1080", false},
		{"http://proxy.internal:99999", false},
		{"http://proxy.internal:3128/path", false},
		{"http://:3128", false},
		{"none", false},
	} {
		_, err := ParseProxy(tt.in)
		if (err == nil) != tt.ok {
			t.Errorf("ParseProxy(%q) = %v, want ok %v", tt.in, err, tt.ok)
		}
		if err != nil && strings.Contains(err.Error(), "pw") {
			t.Errorf("error %q shows the password", err)
		}
	}
}

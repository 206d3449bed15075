package console

import (
	"fmt"
	"net/url"
	"testing"
)

// The portal's form gives basic, bearer or OAuth2 with that type's fields
// alone; mTLS (and anything else) is the operator's.
func TestPortalAuth(t *testing.T) {
	all := url.Values{"auth_username": {"u"}, "auth_password": {"p"}, "auth_token": {"t"}, "auth_token_url": {"https://id.example/token"},
		"auth_client_id": {"c"}, "auth_client_secret": {"s"}, "auth_scopes": {" a  b "}, "auth_audience": {"x"}}
	for _, tt := range []struct {
		typ, want string
		err       bool
	}{
		{"", "map[]", false},
		{"none", "map[]", false},
		{"basic", "map[password:p type:basic username:u]", false},
		{"bearer", "map[token:t type:bearer]", false},
		{"oauth2", "map[audience:x client_id:c client_secret:s scopes:[a b] token_url:https://id.example/token type:oauth2]", false},
		{"mtls", "", true},
		{"digest", "", true},
	} {
		f := url.Values{}
		for k, v := range all {
			f[k] = v
		}
		f.Set("auth_type", tt.typ)
		a, err := portalAuth(f)
		if (err != nil) != tt.err {
			t.Errorf("%q: error %v, want error %v", tt.typ, err, tt.err)
			continue
		}
		if got := fmt.Sprint(a); !tt.err && got != tt.want {
			t.Errorf("%q: %s, want %s", tt.typ, got, tt.want)
		}
	}
}

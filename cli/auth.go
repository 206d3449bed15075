package cli

import (
	"flag"
	"strings"
)

// authFlags adds the flags of an endpoint's auth and proxy to fs and
// returns what puts those given into an add or update body. Values go to
// the admin API as they are: env:, file: and file paths are the config
// file's alone (the API refuses them), so a PEM certificate is given as
// its text, e.g. --auth-cert "$(cat client.pem)".
func authFlags(fs *flag.FlagSet) func(in map[string]any) error {
	typ := fs.String("auth", "", "how requests authenticate: basic, bearer, oauth2, mtls, or none to remove it")
	str := map[string]*string{}
	names := map[string]string{} // --auth-* flag -> the field of the API's auth object
	for _, f := range []struct{ name, field, usage string }{
		{"auth-username", "username", "basic: the user name"},
		{"auth-password", "password", "basic: the password"},
		{"auth-token", "token", "bearer: the token"},
		{"auth-token-url", "token_url", "oauth2: the token endpoint (client credentials grant)"},
		{"auth-client-id", "client_id", "oauth2: the client id"},
		{"auth-client-secret", "client_secret", "oauth2: the client secret"},
		{"auth-audience", "audience", "oauth2: the audience parameter, for servers that want one"},
		{"auth-cert", "cert", "mtls: the PEM client certificate (its text)"},
		{"auth-key", "key", "mtls: the PEM private key (its text)"},
	} {
		str[f.field] = fs.String(f.name, "", f.usage)
		names[f.name] = f.field
	}
	var scopes multiFlag
	fs.Var(&scopes, "auth-scope", "oauth2: a scope to ask for (repeatable)")
	proxy := fs.String("proxy", "", "the endpoint's egress proxy: an http:// URL, or none to go direct (default: security.egress_proxy)")
	return func(in map[string]any) error {
		auth := map[string]any{}
		given, typeGiven := false, false
		fs.Visit(func(fl *flag.Flag) {
			switch {
			case fl.Name == "auth":
				typeGiven = true
			case fl.Name == "auth-scope":
				auth["scopes"], given = []string(scopes), true
			case fl.Name == "proxy":
				in["proxy"] = *proxy
			case strings.HasPrefix(fl.Name, "auth-"):
				auth[names[fl.Name]], given = *str[names[fl.Name]], true
			}
		})
		switch {
		case typeGiven && *typ == "none":
			if given {
				return usagef("--auth none takes no other --auth-* flag")
			}
			in["auth"] = nil
		case typeGiven:
			auth["type"] = *typ
			in["auth"] = auth
		case given:
			return usagef("--auth-* flags need --auth TYPE (basic, bearer, oauth2 or mtls): the auth is replaced as a whole")
		}
		return nil
	}
}

package config

import "testing"

// The publish keys: defaults, YAML, environment, and validation naming the
// key.
func TestPublishKeys(t *testing.T) {
	if d := Default(); d.Publish.Listen != "" || !d.Publish.Token.IsZero() {
		t.Fatalf("defaults: %+v, want none", d.Publish)
	}
	c, err := Parse([]byte("publish:\n  token: yaml-token\n  listen: 127.0.0.1:8070\n"), func(string) string { return "" })
	if err != nil || c.Publish.Token.Reveal() != "yaml-token" || c.Publish.Listen != "127.0.0.1:8070" {
		t.Fatalf("YAML: %+v %v", c.Publish, err)
	}
	env := map[string]string{"HOOKJET_PUBLISH_TOKEN": "env-token", "HOOKJET_PUBLISH_LISTEN": "0.0.0.0:8070"}
	c, err = Parse(nil, func(k string) string { return env[k] })
	if err != nil || c.Publish.Token.Reveal() != "env-token" || c.Publish.Listen != "0.0.0.0:8070" {
		t.Fatalf("environment: %+v %v", c.Publish, err)
	}
	for _, tt := range []struct {
		yaml, key, msg string
	}{
		{"publish:\n  listen: nowhere\n", "publish.listen", "not host:port"},
		{"publish:\n  listen: 127.0.0.1:8089\n", "publish.listen", "must differ from admin.listen"},
		{"publish:\n  listen: 0.0.0.0:8070\n", "publish.token", "required when publish.listen"},
	} {
		_, err := Parse([]byte(tt.yaml), func(string) string { return "" })
		wantKeyErr(t, err, tt.key, tt.msg)
	}
	// admin.token authorises the route too: a public publish.listen with it is fine.
	if _, err := Parse([]byte("admin:\n  token: a\npublish:\n  listen: 0.0.0.0:8070\n"), func(string) string { return "" }); err != nil {
		t.Errorf("publish.listen off loopback with admin.token: %v", err)
	}
}

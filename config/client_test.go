package config

import (
	"errors"
	"strings"
	"testing"
)

// A client command reads the server's file but resolves only the secrets
// it uses: an unset env: secret elsewhere does not stop it, and asking for
// that secret names its key.
func TestParseClientLeavesUnusedSecretsForNeed(t *testing.T) {
	const file = `
admin:
  token: env:ADMIN_TOKEN
nats:
  token: file:/nonexistent/nats-token
inbound:
  listen: 127.0.0.1:8090
  sources:
    - id: stripe
      scheme: stripe
      secrets: [env:STRIPE_WHSEC]
    - id: gh
      scheme: github
      secrets: [literal-github-secret]
`
	env := map[string]string{"ADMIN_TOKEN": "t0ken"}
	getenv := func(k string) string { return env[k] }
	if _, err := Parse([]byte(file), getenv); err == nil || !strings.Contains(err.Error(), "STRIPE_WHSEC") {
		t.Fatalf("Parse (the server's load) = %v, want the unset STRIPE_WHSEC named", err)
	}
	c, err := ParseClient([]byte(file), getenv)
	if err != nil {
		t.Fatalf("ParseClient: %v", err)
	}
	if c.Admin.Token.Reveal() != "t0ken" {
		t.Errorf("admin.token = %q, want the resolved value", c.Admin.Token.Reveal())
	}
	if err := c.Need("admin.token", "inbound.sources[1]"); err != nil {
		t.Errorf("Need(admin.token, the github source) = %v, want nil", err)
	}
	err = c.Need("inbound.sources[0]")
	if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "inbound.sources[0].secrets[0]") || !strings.Contains(err.Error(), "STRIPE_WHSEC is empty or unset") {
		t.Errorf("Need(the stripe source) = %v, want an ErrInvalid naming inbound.sources[0].secrets[0] and STRIPE_WHSEC", err)
	}
	if err := c.Need("nats"); err == nil || !strings.Contains(err.Error(), "nats.token") {
		t.Errorf("Need(nats) = %v, want nats.token named", err)
	}
	if err := c.Need("inbound.sources[1"); err != nil {
		t.Errorf("Need matched a key by a partial prefix: %v", err)
	}
}

// An environment override with an unset reference is left for Need too,
// under the key it overrides.
func TestParseClientEnvOverrideLeftForNeed(t *testing.T) {
	env := map[string]string{"HOOKJET_OUTBOX_DSN": "env:PG_DSN"}
	c, err := ParseClient(nil, func(k string) string { return env[k] })
	if err != nil {
		t.Fatalf("ParseClient: %v", err)
	}
	if err := c.Need("admin"); err != nil {
		t.Errorf("Need(admin) = %v", err)
	}
	if err := c.Need("outbox.dsn"); err == nil || !strings.Contains(err.Error(), "HOOKJET_OUTBOX_DSN") {
		t.Errorf("Need(outbox.dsn) = %v, want HOOKJET_OUTBOX_DSN named", err)
	}
}

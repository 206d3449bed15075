package config

import (
	"strings"
	"testing"
	"time"
)

func TestInboundParses(t *testing.T) {
	data := `
inbound:
  listen: 127.0.0.1:8090
  sources:
    - id: stripe
      scheme: stripe
      secrets: [whsec_plainstripesecret, env:STRIPE_NEXT]
      tolerance: 10m
    - id: gh
      scheme: github
      secrets: [file:/run/gh]
    - id: custom
      scheme: hmac
      secrets: [s3cret]
      header: X-Signature
      algorithm: sha512
      encoding: base64
      prefix: "sha512="
      id_header: X-Event-Id
      type_header: X-Event-Type
`
	files := func(path string) (string, error) { return "gh-secret", nil }
	c, err := parse([]byte(data), envOf(map[string]string{"STRIPE_NEXT": "whsec_next"}), files)
	if err != nil {
		t.Fatal(err)
	}
	in := c.Inbound
	if in.Listen != "127.0.0.1:8090" || in.MaxBodyBytes != DefaultInboundMaxBody || len(in.Sources) != 3 {
		t.Fatalf("inbound = %+v", in)
	}
	st := in.Sources[0]
	if st.Secrets[1].Reveal() != "whsec_next" || st.Window() != 10*time.Minute {
		t.Errorf("stripe source: next secret from env %v, window %s", st.Secrets[1].Reveal() == "whsec_next", st.Window())
	}
	if in.Sources[1].Secrets[0].Reveal() != "gh-secret" || in.Sources[1].Window() != DefaultInboundTolerance {
		t.Errorf("github source = %+v", in.Sources[1])
	}
	if h := in.Sources[2]; h.Header != "X-Signature" || h.Algorithm != "sha512" || h.Encoding != "base64" || h.Prefix != "sha512=" || h.IDHeader != "X-Event-Id" || h.TypeHeader != "X-Event-Type" {
		t.Errorf("hmac source = %+v", h)
	}
	if s := in.Sources[0].String(); strings.Contains(s, "plainstripe") {
		t.Errorf("String() shows a secret: %s", s)
	}
}

func TestInboundDefaultIsOff(t *testing.T) {
	c := Default()
	if c.Inbound.Listen != "" || c.Inbound.MaxBodyBytes != 1048576 || c.Inbound.Sources != nil {
		t.Errorf("default inbound = %+v", c.Inbound)
	}
}

func TestInboundInvalid(t *testing.T) {
	const src = "inbound:\n  sources:\n    - id: a\n      scheme: github\n      secrets: [x]\n"
	tests := []struct {
		name, data, key, reason string
	}{
		{"listen", "inbound:\n  listen: nowhere\n", "inbound.listen", "not host:port"},
		{"listen equals admin", "admin:\n  listen: 127.0.0.1:9999\ninbound:\n  listen: 127.0.0.1:9999\n", "inbound.listen", "must differ from admin.listen"},
		{"body limit", "inbound:\n  max_body_bytes: 0\n", "inbound.max_body_bytes", "between 1 and"},
		{"body limit too large", "inbound:\n  max_body_bytes: 99999999999\n", "inbound.max_body_bytes", "between 1 and"},
		{"missing id", "inbound:\n  sources:\n    - scheme: github\n      secrets: [x]\n", "inbound.sources[0].id", "is required"},
		{"bad id", "inbound:\n  sources:\n    - id: Stripe!\n      scheme: github\n      secrets: [x]\n", "inbound.sources[0].id", "may contain only"},
		{"duplicate id", src + "    - id: a\n      scheme: github\n      secrets: [y]\n", "inbound.sources[1].id", "already the id of inbound.sources[0]"},
		{"missing scheme", "inbound:\n  sources:\n    - id: a\n      secrets: [x]\n", "inbound.sources[0].scheme", "is required"},
		{"unknown scheme", "inbound:\n  sources:\n    - id: a\n      scheme: paypal\n      secrets: [x]\n", "inbound.sources[0].scheme", `got "paypal"`},
		{"no secrets", "inbound:\n  sources:\n    - id: a\n      scheme: github\n", "inbound.sources[0].secrets", "at least one"},
		{"empty secret", "inbound:\n  sources:\n    - id: a\n      scheme: github\n      secrets: [\"\"]\n", "inbound.sources[0].secrets[0]", "must not be empty"},
		{"standard secret", "inbound:\n  sources:\n    - id: a\n      scheme: standard\n      secrets: [notwhsec]\n", "inbound.sources[0].secrets[0]", "whsec_"},
		{"tolerance", src + "      tolerance: 48h\n", "inbound.sources[0].tolerance", "at most 24h"},
		{"hmac option elsewhere", src + "      header: X-Sig\n", "inbound.sources[0].header", "scheme hmac only"},
		{"hmac header", "inbound:\n  sources:\n    - id: a\n      scheme: hmac\n      secrets: [x]\n", "inbound.sources[0].header", "is required with scheme hmac"},
		{"hmac header name", "inbound:\n  sources:\n    - id: a\n      scheme: hmac\n      secrets: [x]\n      header: \"X Sig\"\n", "inbound.sources[0].header", "not a valid header name"},
		{"hmac algorithm", "inbound:\n  sources:\n    - id: a\n      scheme: hmac\n      secrets: [x]\n      header: X-Sig\n      algorithm: md5\n", "inbound.sources[0].algorithm", "sha256, sha1 or sha512"},
		{"hmac encoding", "inbound:\n  sources:\n    - id: a\n      scheme: hmac\n      secrets: [x]\n      header: X-Sig\n      encoding: base32\n", "inbound.sources[0].encoding", "hex or base64"},
		{"hmac id header", "inbound:\n  sources:\n    - id: a\n      scheme: hmac\n      secrets: [x]\n      header: X-Sig\n      id_header: \"a:b\"\n", "inbound.sources[0].id_header", "not a valid header name"},
		{"unknown key", src + "      tolerence: 1m\n", "inbound.sources[0].tolerence", `did you mean "tolerance"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseErr(t, tt.data, nil)
			findKeyErr(t, err, tt.key, tt.reason)
			if strings.Contains(err.Error(), "notwhsec") {
				t.Errorf("error shows a secret: %v", err)
			}
		})
	}
}

// A negative tolerance would refuse every signed request as outside the
// window. The file's parser refuses negative durations; a Config built by
// a program (hookjettest, the bench) is checked by Validate, naming the key.
func TestInboundNegativeToleranceRefused(t *testing.T) {
	c := Default()
	c.Inbound.Listen = "127.0.0.1:8090"
	c.Inbound.Sources = []InboundSource{{ID: "stripe", Scheme: SchemeStripe, Secrets: []Secret{NewSecret("x")}, Tolerance: -5 * time.Minute}}
	findKeyErr(t, c.Validate(), "inbound.sources[0].tolerance", "must not be negative")
}

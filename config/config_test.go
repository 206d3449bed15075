package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"             // 24 bytes, from DESIGN.md
	secretB = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=" // 32 bytes, padded
)

// envOf returns a getenv over m.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// noFiles is a readFile for tests that must not touch the file system.
func noFiles(path string) (string, error) {
	return "", errors.New("no file " + path + " in this test")
}

func mustParse(t *testing.T, data string, env map[string]string) *Config {
	t.Helper()
	c, err := parse([]byte(data), envOf(env), noFiles)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return c
}

func parseErr(t *testing.T, data string, env map[string]string) error {
	t.Helper()
	c, err := parse([]byte(data), envOf(env), noFiles)
	if err == nil {
		t.Fatalf("Parse succeeded, want an error; config: %+v", c)
	}
	if c != nil {
		t.Errorf("Parse returned a config along with an error")
	}
	if !errors.Is(err, ErrInvalid) {
		t.Errorf("error does not wrap ErrInvalid: %v", err)
	}
	return err
}

// fieldErrs returns the FieldErrors that Parse or Validate joined into err.
func fieldErrs(err error) []*FieldError {
	var out []*FieldError
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if fe, ok := errors.AsType[*FieldError](e); ok {
				out = append(out, fe)
			}
		}
	}
	return out
}

// findKeyErr returns the FieldError in err for key whose reason contains
// substr, failing the test if there is none.
func findKeyErr(t *testing.T, err error, key, substr string) *FieldError {
	t.Helper()
	for _, fe := range fieldErrs(err) {
		if fe.Key == key && strings.Contains(fe.Err.Error(), substr) {
			if !errors.Is(fe, ErrInvalid) {
				t.Errorf("FieldError %v does not wrap ErrInvalid", fe)
			}
			return fe
		}
	}
	t.Fatalf("no error for key %q containing %q in:\n%v", key, substr, err)
	return nil
}

// wantKeyErr fails unless err holds a FieldError for key whose reason
// contains substr.
func wantKeyErr(t *testing.T, err error, key, substr string) {
	t.Helper()
	_ = findKeyErr(t, err, key, substr)
}

// endpointYAML is a minimal valid endpoints section.
const endpointYAML = `
endpoints:
  - id: crm
    url: https://crm.example.com/hooks
    secrets: [` + secretA + `]
`

func TestDefault(t *testing.T) {
	d := Default()
	if err := d.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	for _, tt := range []struct{ name, data string }{
		{"empty", ""},
		{"comment only", "# nothing\n"},
		{"document marker", "---\n"},
		{"null", "~\n"},
		{"null sections", "nats:\nstreams:\ndefaults:\n  retry:\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.data, nil)
			if !reflect.DeepEqual(*c, d) {
				t.Errorf("Parse(%q) =\n%+v\nwant Default() =\n%+v", tt.data, *c, d)
			}
		})
	}
	want := map[string]any{
		"DataDir":                           "./data",
		"NATS.Listen":                       "127.0.0.1:4222",
		"Streams.Replicas":                  1,
		"Streams.DuplicateWindow":           2 * time.Minute,
		"Streams.MaxAge":                    168 * time.Hour,
		"Streams.MaxBytes":                  int64(8 << 30),
		"Streams.DLQMaxAge":                 720 * time.Hour,
		"Streams.DLQMaxBytes":               int64(1 << 30),
		"Worker.Concurrency":                256,
		"Worker.ShutdownGrace":              30 * time.Second,
		"Dedupe.TTL":                        24 * time.Hour,
		"Admin.Listen":                      "127.0.0.1:8089",
		"Log.Format":                        "text",
		"Log.Level":                         "info",
		"Log.Enabled":                       true,
		"Log.MaxAge":                        72 * time.Hour,
		"Log.MaxBytes":                      int64(8 << 30),
		"Log.ResponseBytes":                 1024,
		"Security.MaxPayloadBytes":          1 << 20,
		"Security.MaxEndpoints":             100000,
		"Metrics.MaxEndpointSeries":         1000,
		"Defaults.Timeout":                  15 * time.Second,
		"Defaults.MaxInFlight":              16,
		"Defaults.RateLimit.RPS":            0.0,
		"Defaults.RateLimit.Burst":          0,
		"Defaults.Retry.Base":               5 * time.Second,
		"Defaults.Retry.Cap":                time.Hour,
		"Defaults.Retry.MaxAttempts":        20,
		"Defaults.Retry.MaxAge":             24 * time.Hour,
		"Defaults.Breaker.FailureThreshold": 10,
		"Defaults.Breaker.Cooldown":         5 * time.Minute,
		"Defaults.Breaker.MaxCooldown":      time.Hour,
		"Defaults.Breaker.SlowP95":          5 * time.Second,
	}
	for path, w := range want {
		t.Run(path, func(t *testing.T) {
			v := reflect.ValueOf(d)
			for name := range strings.SplitSeq(path, ".") {
				v = v.FieldByName(name)
			}
			if got := v.Interface(); got != w {
				t.Errorf("Default().%s = %v, want %v", path, got, w)
			}
		})
	}
}

const fullYAML = `
data_dir: /var/lib/hookjet
nats:
  url: nats://a.example.com:4222, tls://b.example.com:4443
  listen: 127.0.0.1:14222
  creds: /etc/hookjet/nats.creds
  tls_ca: /etc/hookjet/ca.pem
  tls_cert: /etc/hookjet/cert.pem
  tls_key: /etc/hookjet/key.pem
  sync: 30s
streams:
  replicas: 3
  duplicate_window: 5m
  max_age: 72h
  max_bytes: 1073741824
  dlq_max_age: 1440h
  dlq_max_bytes: 536870912
  tasks_max_bytes: 2GiB
worker:
  concurrency: 512
  shutdown_grace: 45s
dedupe:
  ttl: 48h
admin:
  listen: 0.0.0.0:9090
  token: admin-token
log:
  format: json
  level: debug
  enabled: true
  max_age: 24h
  max_bytes: 1073741824
  response_bytes: 512
security:
  allow_private_networks: true
  allow_cidrs: [10.0.0.0/8, "fd00::/8"]
  https_only: true
  max_payload_bytes: 262144
  max_endpoints: 50
  secret_key: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=
outbox: {dsn: "postgres://app@db/app", table: app.outbox, batch: 100, poll: 2s}
metrics:
  max_endpoint_series: 200
defaults:
  timeout: 10s
  max_in_flight: 8
  max_backlog: 5000
  ordering: key
  rate_limit: {rps: 2.5, burst: 5}
  retry: {base: 1s, cap: 30m, max_attempts: 10, max_age: 12h}
  breaker: {failure_threshold: 5, cooldown: 1m, max_cooldown: 30m, slow_p95: 2s}
  transform_timeout: 100ms
endpoints:
  - id: crm
    url: https://crm.example.com/hooks?x=1
    secrets: [` + secretA + `, ` + secretB + `]
    events: ["order.*", "lead.created"]
    headers: {X-Api-Key: key-123, X-Tenant: acme}
    insecure_skip_verify: true
    timeout: 3s
    max_in_flight: 4
    ordering_on_dead_letter: hold
    rate_limit: {rps: 10}
    retry: {base: 2s, cap: 10m, max_attempts: 4, max_age: 1h}
    breaker: {failure_threshold: 3, cooldown: 30s, max_cooldown: 10m, slow_p95: 1s}
    filter: data.amount > 1000 && data.currency == "EUR"
    transform: |
      function handler(webhook) {
        webhook.payload = {text: "order " + webhook.payload.id};
        return webhook;
      }
    transform_max_memory: 16MiB
  - id: billing_v2
    url: https://billing.example.com/in
    secrets: [` + secretB + `]
`

func TestParseFull(t *testing.T) {
	got := mustParse(t, fullYAML, nil)
	defaults := Settings{
		Timeout:     10 * time.Second,
		MaxInFlight: 8,
		MaxBacklog:  5000,
		RateLimit:   RateLimit{RPS: 2.5, Burst: 5},
		Retry:       Retry{Base: time.Second, Cap: 30 * time.Minute, MaxAttempts: 10, MaxAge: 12 * time.Hour},
		Breaker:     Breaker{FailureThreshold: 5, Cooldown: time.Minute, MaxCooldown: 30 * time.Minute, SlowP95: 2 * time.Second},
		Ordering:    OrderingKey,

		OrderingOnDeadLetter: OnDeadLetterSkip,
		TransformTimeout:     100 * time.Millisecond,
		TransformMaxMemory:   64 << 20,
	}
	want := Config{
		DataDir: "/var/lib/hookjet",
		NATS: NATS{
			URL:     "nats://a.example.com:4222, tls://b.example.com:4443",
			Listen:  "127.0.0.1:14222",
			Creds:   "/etc/hookjet/nats.creds",
			TLSCA:   "/etc/hookjet/ca.pem",
			TLSCert: "/etc/hookjet/cert.pem",
			TLSKey:  "/etc/hookjet/key.pem",
			Sync:    "30s",
		},
		Streams: Streams{
			Replicas:        3,
			DuplicateWindow: 5 * time.Minute,
			MaxAge:          72 * time.Hour,
			MaxBytes:        1 << 30,
			DLQMaxAge:       1440 * time.Hour,
			DLQMaxBytes:     512 << 20,
			TasksMaxBytes:   2 << 30,
		},
		Worker: Worker{Concurrency: 512, ShutdownGrace: 45 * time.Second},
		Dedupe: Dedupe{TTL: 48 * time.Hour},
		Admin:  Admin{Listen: "0.0.0.0:9090", Token: NewSecret("admin-token")},
		Log:    Log{Format: "json", Level: "debug", Enabled: true, MaxAge: 24 * time.Hour, MaxBytes: 1 << 30, ResponseBytes: 512},
		Security: Security{
			AllowPrivateNetworks: true,
			AllowCIDRs:           []string{"10.0.0.0/8", "fd00::/8"},
			HTTPSOnly:            true,
			MaxPayloadBytes:      256 << 10,
			MaxEndpoints:         50,
			SecretKey:            NewSecret("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="),
		},
		Outbox:   Outbox{DSN: NewSecret("postgres://app@db/app"), Table: "app.outbox", Batch: 100, Poll: 2 * time.Second},
		Metrics:  Metrics{MaxEndpointSeries: 200},
		Inbound:  Inbound{MaxBodyBytes: DefaultInboundMaxBody},
		Catalog:  Catalog{Validate: "warn"},
		Defaults: defaults,
		Endpoints: []Endpoint{
			{
				ID:                 "crm",
				URL:                "https://crm.example.com/hooks?x=1",
				Secrets:            []Secret{NewSecret(secretA), NewSecret(secretB)},
				Events:             []string{"order.*", "lead.created"},
				Headers:            map[string]Secret{"X-Api-Key": NewSecret("key-123"), "X-Tenant": NewSecret("acme")},
				InsecureSkipVerify: true,
				Source:             SourceConfig,
				Filter:             `data.amount > 1000 && data.currency == "EUR"`,
				Transform:          "function handler(webhook) {\n  webhook.payload = {text: \"order \" + webhook.payload.id};\n  return webhook;\n}\n",
				Settings: Settings{
					Timeout:     3 * time.Second,
					MaxInFlight: 4,
					MaxBacklog:  5000,
					Ordering:    OrderingKey, // inherited from defaults

					OrderingOnDeadLetter: OnDeadLetterHold,
					RateLimit:            RateLimit{RPS: 10, Burst: 5}, // burst inherited field by field
					Retry:                Retry{Base: 2 * time.Second, Cap: 10 * time.Minute, MaxAttempts: 4, MaxAge: time.Hour},
					Breaker:              Breaker{FailureThreshold: 3, Cooldown: 30 * time.Second, MaxCooldown: 10 * time.Minute, SlowP95: time.Second},
					TransformTimeout:     100 * time.Millisecond,
					TransformMaxMemory:   16 << 20,
				},
			},
			{
				ID:       "billing_v2",
				URL:      "https://billing.example.com/in",
				Secrets:  []Secret{NewSecret(secretB)},
				Events:   []string{">"},
				Source:   SourceConfig,
				Settings: defaults,
			},
		},
	}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("Parse(full) differs:\n%s", diffLines(deepString(*got), deepString(want)))
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate of a parsed config: %v", err)
	}
}

// diffLines lists the lines that differ between got and want.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for i := range max(len(g), len(w)) {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "got  %s\nwant %s\n", gl, wl)
		}
	}
	return b.String()
}

// deepString renders c with secrets revealed, for diffs in test failures.
func deepString(c Config) string {
	var b strings.Builder
	v := reflect.ValueOf(c)
	var walk func(reflect.Value, string)
	walk = func(v reflect.Value, path string) {
		switch {
		case v.Type() == secretType:
			b.WriteString(path + " = " + v.Interface().(Secret).Reveal() + "\n")
		case v.Type() == reflect.TypeFor[time.Time]():
			fmt.Fprintf(&b, "%s = %v\n", path, v.Interface())
		case v.Kind() == reflect.Struct:
			for i := range v.NumField() {
				walk(v.Field(i), path+"."+v.Type().Field(i).Name)
			}
		case v.Kind() == reflect.Slice:
			if v.IsNil() {
				b.WriteString(path + " = nil\n")
			}
			for i := range v.Len() {
				walk(v.Index(i), fmt.Sprintf("%s[%d]", path, i))
			}
		case v.Kind() == reflect.Map:
			if v.IsNil() {
				b.WriteString(path + " = nil\n")
			}
			for _, k := range v.MapKeys() {
				walk(v.MapIndex(k), path+"."+k.String())
			}
		default:
			fmt.Fprintf(&b, "%s = %v\n", path, v.Interface())
		}
	}
	walk(v, "")
	return b.String()
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "hookjet.yaml")
	if err := os.WriteFile(path, []byte(fullYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path, nil)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if c.DataDir != "/var/lib/hookjet" || len(c.Endpoints) != 2 {
		t.Errorf("Load read %+v", c)
	}

	_, err = Load(filepath.Join(dir, "missing.yaml"), nil)
	if !errors.Is(err, ErrInvalid) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(missing) = %v, want ErrInvalid and ErrNotExist", err)
	}
}

func TestEndpointOverridesFieldByField(t *testing.T) {
	c := mustParse(t, `
defaults:
  timeout: 20s
  retry: {base: 2s, max_age: 6h}
  rate_limit: {rps: 50}
endpoints:
  - id: a
    url: https://a.example.com/
    secrets: [`+secretA+`]
    retry: {max_attempts: 4}
    breaker: {cooldown: 1m}
  - id: b
    url: https://b.example.com/
    secrets: [`+secretA+`]
    rate_limit: {rps: 200}
`, nil)
	d := Default().Defaults
	a, b := c.Endpoints[0], c.Endpoints[1]
	tests := []struct {
		name      string
		got, want any
	}{
		{"defaults keep unset fields", c.Defaults.Retry.Cap, d.Retry.Cap},
		{"defaults override", c.Defaults.Retry.Base, 2 * time.Second},
		{"defaults burst normalised", c.Defaults.RateLimit.Burst, 50},
		{"inherited timeout", a.Timeout, 20 * time.Second},
		{"overridden max_attempts", a.Retry.MaxAttempts, 4},
		{"inherited retry.base from file defaults", a.Retry.Base, 2 * time.Second},
		{"inherited retry.cap from Default", a.Retry.Cap, time.Hour},
		{"inherited retry.max_age", a.Retry.MaxAge, 6 * time.Hour},
		{"overridden breaker.cooldown", a.Breaker.Cooldown, time.Minute},
		{"inherited breaker.max_cooldown", a.Breaker.MaxCooldown, time.Hour},
		{"inherited breaker.failure_threshold", a.Breaker.FailureThreshold, 10},
		{"inherited rate limit", a.RateLimit, RateLimit{RPS: 50, Burst: 50}},
		// The burst follows the endpoint's own rps, not the normalised default.
		{"burst from own rps", b.RateLimit, RateLimit{RPS: 200, Burst: 200}},
		{"untouched retry", b.Retry, c.Defaults.Retry},
		{"default events", a.Events, []string{">"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Errorf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

func TestBurstDefault(t *testing.T) {
	tests := []struct {
		rps   float64
		burst int
		want  int
	}{
		{0, 0, 0},
		{0.2, 0, 1},
		{1, 0, 1},
		{2.5, 0, 3},
		{100, 0, 100},
		{100, 7, 7},
	}
	for _, tt := range tests {
		got := RateLimit{RPS: tt.rps, Burst: tt.burst}.normalized().Burst
		if got != tt.want {
			t.Errorf("burst for rps=%g burst=%d = %d, want %d", tt.rps, tt.burst, got, tt.want)
		}
	}
}

func TestAnchorsAndMerge(t *testing.T) {
	c := mustParse(t, `
endpoints:
  - &base
    id: a
    url: https://a.example.com/
    secrets: &secrets [`+secretA+`]
    retry: &retry {max_attempts: 3}
  - <<: *base
    id: b
    breaker: {cooldown: 1m}
  - id: c
    url: https://c.example.com/
    secrets: *secrets
    retry: *retry
`, nil)
	if len(c.Endpoints) != 3 {
		t.Fatalf("got %d endpoints, want 3", len(c.Endpoints))
	}
	b := c.Endpoints[1]
	if b.ID != "b" || b.URL != "https://a.example.com/" || b.Retry.MaxAttempts != 3 || b.Breaker.Cooldown != time.Minute {
		t.Errorf("merged endpoint = %+v", b)
	}
	if got := c.Endpoints[2]; len(got.Secrets) != 1 || got.Retry.MaxAttempts != 3 {
		t.Errorf("aliased endpoint = %+v", got)
	}
}

func TestManyEndpoints(t *testing.T) {
	var b strings.Builder
	b.WriteString("security: {max_endpoints: 10000}\nendpoints:\n")
	for i := range 10000 {
		if i == 0 {
			fmt.Fprintf(&b, "  - {id: e%d, url: 'https://e%d.example.com/', secrets: &s [%s], events: &ev [order.*, lead.*], retry: &r {max_attempts: 3}}\n", i, i, secretA)
			continue
		}
		fmt.Fprintf(&b, "  - {id: e%d, url: 'https://e%d.example.com/', secrets: *s, events: *ev, retry: *r}\n", i, i)
	}
	c := mustParse(t, b.String(), nil)
	if len(c.Endpoints) != 10000 || c.Endpoints[9999].Retry.MaxAttempts != 3 || len(c.Endpoints[9999].Events) != 2 {
		t.Errorf("parsed %d endpoints, last %+v", len(c.Endpoints), c.Endpoints[len(c.Endpoints)-1])
	}
}

func BenchmarkParse(b *testing.B) {
	data := []byte(fullYAML)
	for b.Loop() {
		if _, err := Parse(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestNATSSyncInterval(t *testing.T) {
	tests := []struct {
		sync string
		want time.Duration
		lazy bool
	}{
		{"always", 0, false},
		{"", 0, false},
		{"2m", 2 * time.Minute, true},
		{"500ms", 500 * time.Millisecond, true},
	}
	for _, tt := range tests {
		d, lazy := NATS{Sync: tt.sync}.SyncInterval()
		if d != tt.want || lazy != tt.lazy {
			t.Errorf("SyncInterval(%q) = %v, %v; want %v, %v", tt.sync, d, lazy, tt.want, tt.lazy)
		}
	}
	if got := Default().NATS.Sync; got != SyncAlways {
		t.Errorf("default nats.sync = %q, want %q", got, SyncAlways)
	}
}

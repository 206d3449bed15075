package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestUnknownKeys(t *testing.T) {
	tests := []struct {
		name, data, key, reason string
		line                    int
	}{
		{"top level", "data_dri: /x\n", "data_dri", `unknown key (did you mean "data_dir"?)`, 1},
		{"nested", "streams:\n  replicas: 1\n  max_ag: 1h\n", "streams.max_ag", `unknown key (did you mean "max_age"?)`, 3},
		{"deeply nested", "defaults:\n  retry:\n    maximum: 3\n", "defaults.retry.maximum", "unknown key", 3},
		{"inside an endpoint", endpointYAML + "    retyr: {max_attempts: 3}\n", "endpoints[0].retyr", `unknown key (did you mean "retry"?)`, 6},
		{"inside an endpoint's settings", endpointYAML + "    breaker: {colldown: 1m}\n", "endpoints[0].breaker.colldown", `unknown key (did you mean "cooldown"?)`, 6},
		{"no suggestion for distant names", "zzzzzzzz: 1\n", "zzzzzzzz", "unknown key", 1},
		{"merged key", "endpoints:\n  - <<: {id: a, tiemout: 1s}\n", "endpoints[0].tiemout", `unknown key (did you mean "timeout"?)`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseErr(t, tt.data, nil)
			fe := findKeyErr(t, err, tt.key, "unknown key")
			if fe.Err.Error() != tt.reason {
				t.Errorf("reason = %q, want %q", fe.Err, tt.reason)
			}
			if fe.Line != tt.line {
				t.Errorf("line = %d, want %d", fe.Line, tt.line)
			}
			if want := tt.key + ": " + tt.reason; !strings.HasPrefix(err.Error(), want) {
				t.Errorf("message %q does not start with %q", err, want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, data, key, reason string
	}{
		{"bare integer duration", "streams:\n  max_age: 3600\n", "streams.max_age", "use a unit, e.g. 5s"},
		{"zero without unit", "defaults:\n  timeout: 0\n", "defaults.timeout", "use a unit"},
		{"quoted bare duration", "dedupe:\n  ttl: \"10\"\n", "dedupe.ttl", "use a unit"},
		{"float duration", "dedupe:\n  ttl: 1.5\n", "dedupe.ttl", "use a unit"},
		{"bad duration", "dedupe:\n  ttl: soon\n", "dedupe.ttl", "not a duration"},
		{"negative duration", "worker:\n  shutdown_grace: -5s\n", "worker.shutdown_grace", "negative"},
		{"endpoint duration", endpointYAML + "    timeout: 30\n", "endpoints[0].timeout", "use a unit"},
		{"string for int", "worker:\n  concurrency: lots\n", "worker.concurrency", "want an integer"},
		{"float for int", "worker:\n  concurrency: 1.5\n", "worker.concurrency", "want an integer"},
		{"int too large", "streams:\n  max_bytes: 99999999999999999999\n", "streams.max_bytes", "want an integer"},
		{"string for bool", "security:\n  https_only: yes\n", "security.https_only", "want true or false"},
		{"string for float", "defaults:\n  rate_limit: {rps: fast}\n", "defaults.rate_limit.rps", "want a number"},
		{"infinite float", "defaults:\n  rate_limit: {rps: .inf}\n", "defaults.rate_limit.rps", "finite"},
		{"list for scalar", "data_dir: [a, b]\n", "data_dir", "want a single value, got a list"},
		{"scalar for section", "nats: nats://x\n", "nats", "want a mapping, got a scalar"},
		{"scalar for list", "security:\n  allow_cidrs: 10.0.0.0/8\n", "security.allow_cidrs", "want a list"},
		{"scalar for endpoints", "endpoints: crm\n", "endpoints", "want a list"},
		{"scalar endpoint", "endpoints: [crm]\n", "endpoints[0]", "want a mapping"},
		{"duplicate key", "log:\n  level: info\n  level: debug\n", "log.level", "duplicate key, first set on line 2"},
		{"duplicate endpoint key", endpointYAML + "    id: other\n", "endpoints[0].id", "duplicate key"},
		{"secret from unset env", "admin:\n  token: env:NO_SUCH_VAR\n", "admin.token", "environment variable NO_SUCH_VAR is empty or unset"},
		{"secret from missing file", "admin:\n  token: file:/nonexistent\n", "admin.token", "no file /nonexistent"},
		{"env: without name", "nats:\n  token: 'env:'\n", "nats.token", "needs a variable name"},
		{"file: without path", "nats:\n  token: 'file:'\n", "nats.token", "needs a path"},
		{"token_file missing", "admin:\n  token_file: /nonexistent\n", "admin.token_file", "no file /nonexistent"},
		{"token and token_file", "admin:\n  token: x\n  token_file: /t\n", "admin.token_file", "cannot be combined with admin.token"},
		{"header secret from unset env", endpointYAML + "    headers: {X-Key: env:NOPE}\n", "endpoints[0].headers.X-Key", "NOPE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantKeyErr(t, parseErr(t, tt.data, nil), tt.key, tt.reason)
		})
	}
}

func TestSyntaxErrors(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"bad yaml", "a: [\n", "yaml:"},
		{"tab indentation", "nats:\n\turl: x\n", "yaml:"},
		{"two documents", "data_dir: a\n---\ndata_dir: b\n", "more than one YAML document"},
		{"top level list", "- a\n", "line 1: the top level must be a mapping of keys such as data_dir and endpoints, got a list"},
		{"top level scalar", "hello\n", "got a scalar"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := parseErr(t, tt.data, nil); !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
		})
	}
}

func TestValidationErrors(t *testing.T) {
	ep := func(extra string) string { return endpointYAML + extra }
	tests := []struct {
		name, data, key, reason string
	}{
		{"empty data_dir", "data_dir: ''\n", "data_dir", "must not be empty"},
		{"nats url scheme", "nats:\n  url: http://x:4222\n", "nats.url", "entry 1: scheme must be nats or tls"},
		{"nats url second entry", "nats:\n  url: nats://a:4222,nats://\n", "nats.url", "entry 2: missing host"},
		{"nats listen", "nats:\n  listen: localhost\n", "nats.listen", "not host:port"},
		{"nats sync word", "nats:\n  sync: never\n", "nats.sync", `"never" is neither "always" nor a positive duration such as 2m`},
		{"nats sync zero", "nats:\n  sync: 0s\n", "nats.sync", `"0s" is neither "always" nor a positive duration such as 2m`},
		{"nats listen port", "nats:\n  listen: 127.0.0.1:99999\n", "nats.listen", "invalid port"},
		{"embedded server exposed", "nats:\n  listen: 0.0.0.0:4222\n", "nats.listen", "requires nats.token or nats.user and nats.password"},
		{"embedded server exposed, user without password", "nats:\n  listen: ':4222'\n  user: u\n", "nats.listen", "requires"},
		{"user without password", "nats:\n  url: nats://x:4222\n  user: u\n", "nats.password", "required when nats.user is set"},
		{"password without user", "nats:\n  password: p\n", "nats.user", "required when nats.password is set"},
		{"token and user", "nats:\n  token: t\n  user: u\n  password: p\n", "nats.token", "cannot be combined"},
		{"creds and nkey", "nats:\n  url: nats://x:4222\n  creds: a\n  nkey: b\n", "nats.nkey", "cannot be combined with nats.creds"},
		{"creds for embedded", "nats:\n  creds: a\n", "nats.creds", "applies only with nats.url"},
		{"tls cert without key", "nats:\n  url: tls://x:4222\n  tls_cert: c.pem\n", "nats.tls_key", "set together"},
		{"replicas low", "streams:\n  replicas: 0\n", "streams.replicas", "between 1 and 5"},
		{"replicas high", "streams:\n  replicas: 6\n", "streams.replicas", "between 1 and 5"},
		{"duplicate window zero", "streams:\n  duplicate_window: 0s\n", "streams.duplicate_window", "must be positive"},
		{"duplicate window above max_age", "streams:\n  duplicate_window: 2h\n  max_age: 1h\n", "streams.duplicate_window", "must not exceed streams.max_age"},
		{"max_age zero", "streams:\n  max_age: 0s\n", "streams.max_age", "must be positive"},
		{"dlq_max_age zero", "streams:\n  dlq_max_age: 0s\n", "streams.dlq_max_age", "must be positive"},
		{"max_bytes zero", "streams:\n  max_bytes: 0\n", "streams.max_bytes", "must be positive"},
		{"dlq_max_bytes negative", "streams:\n  dlq_max_bytes: -1\n", "streams.dlq_max_bytes", "must be positive"},
		{"concurrency zero", "worker:\n  concurrency: 0\n", "worker.concurrency", "between 1 and 100000"},
		{"concurrency high", "worker:\n  concurrency: 100001\n", "worker.concurrency", "between 1 and 100000"},
		{"shutdown grace zero", "worker:\n  shutdown_grace: 0s\n", "worker.shutdown_grace", "must be positive"},
		{"dedupe ttl zero", "dedupe:\n  ttl: 0s\n", "dedupe.ttl", "must be positive"},
		{"admin listen", "admin:\n  listen: nope\n", "admin.listen", "not host:port"},
		{"admin exposed without token", "admin:\n  listen: 0.0.0.0:8089\n", "admin.token", "required when admin.listen"},
		{"admin all interfaces without token", "admin:\n  listen: ':8089'\n", "admin.token", "required"},
		{"log format", "log:\n  format: xml\n", "log.format", `must be text or json, got "xml"`},
		{"log level", "log:\n  level: verbose\n", "log.level", "must be debug, info, warn or error"},
		{"log max_age", "log:\n  max_age: 0s\n", "log.max_age", "must be positive"},
		{"log max_bytes", "log:\n  max_bytes: 1000\n", "log.max_bytes", "at least 1 MiB"},
		{"log response_bytes", "log:\n  response_bytes: 70000\n", "log.response_bytes", "between 0 and 65536"},
		{"allow_cidrs", "security:\n  allow_cidrs: [10.0.0.0/8, 10.0.0.1]\n", "security.allow_cidrs[1]", "not a CIDR prefix"},
		{"max_payload_bytes", "security:\n  max_payload_bytes: 0\n", "security.max_payload_bytes", "between 1 and"},
		{"max_endpoints", "security:\n  max_endpoints: 0\n", "security.max_endpoints", "between 1 and"},
		{"too many endpoints", "security:\n  max_endpoints: 1\n" + endpointYAML + "  - id: two\n    url: https://two.example.com/\n    secrets: [" + secretA + "]\n", "endpoints", "2 endpoints exceed security.max_endpoints (1)"},

		{"defaults timeout low", "defaults:\n  timeout: 500us\n", "defaults.timeout", "between 1ms and 10m0s"},
		{"defaults timeout high", "defaults:\n  timeout: 11m\n", "defaults.timeout", "between 1ms and 10m0s"},
		{"defaults max_in_flight", "defaults:\n  max_in_flight: 0\n", "defaults.max_in_flight", "between 1 and 10000"},
		{"defaults rps negative", "defaults:\n  rate_limit: {rps: -1}\n", "defaults.rate_limit.rps", "must be between 0"},
		{"defaults burst negative", "defaults:\n  rate_limit: {burst: -1}\n", "defaults.rate_limit.burst", "must not be negative"},
		{"retry base zero", "defaults:\n  retry: {base: 0s}\n", "defaults.retry.base", "must be positive"},
		{"retry cap below base", "defaults:\n  retry: {base: 10s, cap: 5s}\n", "defaults.retry.cap", "must be at least retry.base (10s), got 5s"},
		{"retry max_attempts", "defaults:\n  retry: {max_attempts: 0}\n", "defaults.retry.max_attempts", "between 1 and 1000"},
		{"retry max_attempts high", "defaults:\n  retry: {max_attempts: 1001}\n", "defaults.retry.max_attempts", "between 1 and 1000"},
		{"retry max_age", "defaults:\n  retry: {max_age: 0s}\n", "defaults.retry.max_age", "must be positive"},
		{"breaker threshold", "defaults:\n  breaker: {failure_threshold: 0}\n", "defaults.breaker.failure_threshold", "between 1 and 10000"},
		{"breaker cooldown", "defaults:\n  breaker: {cooldown: 0s}\n", "defaults.breaker.cooldown", "must be positive"},
		{"breaker max_cooldown", "defaults:\n  breaker: {max_cooldown: 1m}\n", "defaults.breaker.max_cooldown", "at least breaker.cooldown (5m0s)"},
		{"breaker slow_p95", "defaults:\n  breaker: {slow_p95: 0s}\n", "defaults.breaker.slow_p95", "must be positive"},
		{"defaults ordering", "defaults:\n  ordering: fifo\n", "defaults.ordering", `must be none or key, got "fifo"`},
		{"defaults ordering empty", "defaults:\n  ordering: ''\n", "defaults.ordering", `must be none or key, got ""`},
		{"defaults ordering_on_dead_letter", "defaults:\n  ordering_on_dead_letter: drop\n", "defaults.ordering_on_dead_letter", `must be skip or hold, got "drop"`},

		{"endpoint id missing", "endpoints:\n  - url: https://x.example.com/\n    secrets: [" + secretA + "]\n", "endpoints[0].id", "is required"},
		{"endpoint id charset", strings.Replace(endpointYAML, "id: crm", "id: CRM", 1), "endpoints[0].id", "may contain only a-z, 0-9, _ and -"},
		{"endpoint id length", strings.Replace(endpointYAML, "id: crm", "id: "+strings.Repeat("a", 65), 1), "endpoints[0].id", "at most 64"},
		{"endpoint id duplicate", endpointYAML + "  - id: crm\n    url: https://two.example.com/\n    secrets: [" + secretA + "]\n", "endpoints[1].id", `"crm" is already the id of endpoints[0]`},
		{"endpoint url missing", "endpoints:\n  - id: a\n    secrets: [" + secretA + "]\n", "endpoints[0].url", "is required"},
		{"endpoint url scheme", strings.Replace(endpointYAML, "https://crm", "ftp://crm", 1), "endpoints[0].url", "scheme must be http or https"},
		{"endpoint url no host", strings.Replace(endpointYAML, "https://crm.example.com/hooks", "https:///hooks", 1), "endpoints[0].url", "missing host"},
		{"endpoint url userinfo", strings.Replace(endpointYAML, "https://crm", "https://user:pw@crm", 1), "endpoints[0].url", "must not contain user info"},
		{"endpoint url unparsable", strings.Replace(endpointYAML, "https://crm.example.com/hooks", "'https://crm.example.com:port/'", 1), "endpoints[0].url", "invalid URL"},
		{"endpoint url https only", "security:\n  https_only: true\n" + strings.Replace(endpointYAML, "https://crm", "http://crm", 1), "endpoints[0].url", "must be https"},
		{"endpoint no secrets", "endpoints:\n  - id: a\n    url: https://a.example.com/\n", "endpoints[0].secrets", "at least one signing secret"},
		{"endpoint secret prefix", strings.Replace(endpointYAML, secretA, "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 1), "endpoints[0].secrets[0]", `must start with "whsec_"`},
		{"endpoint secret too short", strings.Replace(endpointYAML, secretA, "whsec_AAAA", 1), "endpoints[0].secrets[0]", "decodes to 3 bytes, want 24 to 64"},
		{"endpoint secret base64", strings.Replace(endpointYAML, secretA, "whsec_!!!!", 1), "endpoints[0].secrets[0]", "bad base64"},
		{"endpoint events empty", ep("    events: []\n"), "endpoints[0].events", "at least one pattern"},
		{"endpoint event empty token", ep("    events: [order..created]\n"), "endpoints[0].events[0]", "empty token"},
		{"endpoint event gt not last", ep("    events: [order.>.x]\n"), "endpoints[0].events[0]", `">" must be the last token`},
		{"endpoint event partial wildcard", ep("    events: [order.cre*]\n"), "endpoints[0].events[0]", "whole tokens"},
		{"endpoint event space", ep("    events: [order created]\n"), "endpoints[0].events[0]", "white space"},
		{"endpoint event empty", ep("    events: ['']\n"), "endpoints[0].events[0]", "empty pattern"},
		{"header name", ep("    headers: {'X Key': v}\n"), "endpoints[0].headers.X Key", "not a valid header name"},
		{"header reserved", ep("    headers: {Webhook-Signature: v}\n"), "endpoints[0].headers.Webhook-Signature", "set by hookjet"},
		{"header reserved host", ep("    headers: {HOST: v}\n"), "endpoints[0].headers.HOST", "set by hookjet"},
		{"header value newline", ep("    headers: {X-Key: \"a\\r\\nX-Evil: 1\"}\n"), "endpoints[0].headers.X-Key", "must not contain CR, LF, NUL"},
		{"header value NUL", ep("    headers: {X-Key: \"a\\0b\"}\n"), "endpoints[0].headers.X-Key", "must not contain"},
		{"header duplicate case", ep("    headers: {X-Key: a, x-key: b}\n"), "endpoints[0].headers", `"X-Key" and "x-key" are the same header`},
		{"endpoint timeout", ep("    timeout: 0s\n"), "endpoints[0].timeout", "between 1ms"},
		{"endpoint retry", ep("    retry: {cap: 1s}\n"), "endpoints[0].retry.cap", "at least retry.base (5s)"},
		{"endpoint breaker", ep("    breaker: {failure_threshold: 10001}\n"), "endpoints[0].breaker.failure_threshold", "between 1 and 10000"},
		{"endpoint rps", ep("    rate_limit: {rps: 2000000}\n"), "endpoints[0].rate_limit.rps", "between 0"},
		{"endpoint ordering", ep("    ordering: Key\n"), "endpoints[0].ordering", `must be none or key, got "Key"`},
		{"endpoint ordering_on_dead_letter", ep("    ordering: key\n    ordering_on_dead_letter: wait\n"), "endpoints[0].ordering_on_dead_letter", `must be skip or hold, got "wait"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantKeyErr(t, parseErr(t, tt.data, nil), tt.key, tt.reason)
		})
	}
}

func TestValidateWithoutParse(t *testing.T) {
	tests := []struct {
		name   string
		modify func(*Config)
		key    string
		reason string
	}{
		{"overlapping events", func(c *Config) { c.Endpoints[0].Events = []string{"order.*", "order.created"} }, "endpoints[0].events[1]", `"order.created" overlaps "order.*"`},
		{"rps without burst", func(c *Config) { c.Endpoints[0].RateLimit = RateLimit{RPS: 5} }, "endpoints[0].rate_limit.burst", "at least 1 when rate_limit.rps is set"},
		{"NaN rps", func(c *Config) { c.Defaults.RateLimit.RPS = nan() }, "defaults.rate_limit.rps", "must be between 0"},
		{"zero settings", func(c *Config) { c.Endpoints[0].Settings = Settings{} }, "endpoints[0].max_in_flight", "between 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.Endpoints = []Endpoint{{ID: "a", URL: "https://a.example.com/", Secrets: []Secret{NewSecret(secretA)}, Events: []string{">"}, Settings: c.Defaults}}
			if err := c.Validate(); err != nil {
				t.Fatalf("valid base config: %v", err)
			}
			tt.modify(&c)
			err := c.Validate()
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want ErrInvalid", err)
			}
			wantKeyErr(t, err, tt.key, tt.reason)
		})
	}
}

func TestMultipleErrors(t *testing.T) {
	err := parseErr(t, `
worker:
  concurrency: 0
log:
  level: loud
  colour: true
defaults:
  timeout: 30
endpoints:
  - id: Bad ID
    url: ftp://x
    secrets: [nope]
    events: ["a.>.b"]
  - id: ok
    url: https://ok.example.com/
    secrets: [`+secretA+`]
    retry: {max_attempts: 0}
`, map[string]string{"HOOKJET_STREAMS_REPLICAS": "many"})
	want := []string{
		"log.colour",
		"defaults.timeout",
		"HOOKJET_STREAMS_REPLICAS",
		"worker.concurrency",
		"log.level",
		"endpoints[0].id",
		"endpoints[0].url",
		"endpoints[0].secrets[0]",
		"endpoints[0].events[0]",
		"endpoints[1].retry.max_attempts",
	}
	var got []string
	for _, fe := range fieldErrs(err) {
		got = append(got, fe.Key)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("error keys:\n%s\nwant:\n%s\nfull error:\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"), err)
	}
	// One line per problem, each "key: reason", decode errors with their line.
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Errorf("error has %d lines, want %d:\n%v", len(lines), len(want), err)
	}
	if !strings.Contains(err.Error(), "defaults.timeout: \"30\" has no unit: use a unit, e.g. 5s (line 8)") {
		t.Errorf("error lacks the duration problem with its line:\n%v", err)
	}
	if !strings.Contains(err.Error(), "worker.concurrency: must be between 1 and 100000, got 0 (line 3)") {
		t.Errorf("validation error lacks its line:\n%v", err)
	}
}

func TestInheritedProblemsReportedOnce(t *testing.T) {
	err := parseErr(t, "defaults:\n  retry: {max_attempts: 0}\n"+endpointYAML+"  - id: b\n    url: https://b.example.com/\n    secrets: ["+secretA+"]\n    retry: {max_attempts: 2000}\n", nil)
	var keys []string
	for _, fe := range fieldErrs(err) {
		keys = append(keys, fe.Key)
	}
	want := "defaults.retry.max_attempts endpoints[1].retry.max_attempts"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys = %s, want %s", got, want)
	}
}

func TestErrorsDoNotLeakSecrets(t *testing.T) {
	const leak = "whsec_SUPERSECRETVALUE"
	err := parseErr(t, "admin:\n  listen: 0.0.0.0:1\n"+
		strings.Replace(endpointYAML, secretA, leak, 1)+
		"    url: https://user:"+leak+"@x.example.com/\n"+
		"    headers: {X-Key: \""+leak+"\\n\", Host: "+leak+"}\n", nil)
	if strings.Contains(err.Error(), "SUPERSECRET") {
		t.Errorf("error leaks a secret:\n%v", err)
	}
}

func nan() float64 {
	var zero float64
	return zero / zero
}

func TestAliasAbuse(t *testing.T) {
	var bomb strings.Builder
	bomb.WriteString("endpoints:\n  - &l0 {headers: {A: x, B: y}}\n")
	for i := 1; i < 30; i++ {
		fmt.Fprintf(&bomb, "  - &l%d {<<: [*l%d, *l%d, *l%d, *l%d]}\n", i, i-1, i-1, i-1, i-1)
	}
	tests := []struct{ name, data, key, reason string }{
		{"merge cycle", "nats: &x {<<: *x}\n", "nats", "<< merges a mapping into itself"},
		{"merge cycle through a list", "nats: &x {<<: [{url: y}, *x]}\n", "nats", "into itself"},
		{"alias cycle", "endpoints: &x [*x]\n", "endpoints[0]", "want a mapping, got a list"},
		{"merge of a scalar", "nats: {<<: 3}\n", "nats", "<< merges only mappings"},
		// 4^29 headers if expanded: the node budget stops it.
		{"exponential merge", bomb.String(), "", "document too large or too deeply aliased"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseErr(t, tt.data, nil)
			if tt.key == "" {
				if !strings.Contains(err.Error(), tt.reason) {
					t.Fatalf("error %v does not contain %q", err, tt.reason)
				}
				if n := len(fieldErrs(err)); n != 1 {
					t.Errorf("got %d errors, want only the budget error:\n%v", n, err)
				}
				return
			}
			wantKeyErr(t, err, tt.key, tt.reason)
		})
	}
}

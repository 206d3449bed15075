package config

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

func TestEnvOverrides(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		file string
		get  func(*Config) any
		want any
	}{
		{"data dir", map[string]string{"HOOKJET_DATA_DIR": "/srv"}, "data_dir: /ignored\n", func(c *Config) any { return c.DataDir }, "/srv"},
		{"nats url", map[string]string{"HOOKJET_NATS_URL": "nats://n:4222"}, "", func(c *Config) any { return c.NATS.URL }, "nats://n:4222"},
		{"admin token", map[string]string{"HOOKJET_ADMIN_TOKEN": "s3cret"}, "", func(c *Config) any { return c.Admin.Token.Reveal() }, "s3cret"},
		{"admin token via env: indirection", map[string]string{"HOOKJET_ADMIN_TOKEN": "env:OTHER", "OTHER": "t2"}, "", func(c *Config) any { return c.Admin.Token.Reveal() }, "t2"},
		{"duration", map[string]string{"HOOKJET_STREAMS_DUPLICATE_WINDOW": "90s"}, "", func(c *Config) any { return c.Streams.DuplicateWindow }, 90 * time.Second},
		{"int64", map[string]string{"HOOKJET_STREAMS_MAX_BYTES": "1024"}, "", func(c *Config) any { return c.Streams.MaxBytes }, int64(1024)},
		{"nested settings", map[string]string{"HOOKJET_DEFAULTS_RETRY_MAX_ATTEMPTS": "7"}, "", func(c *Config) any { return c.Defaults.Retry.MaxAttempts }, 7},
		{"float", map[string]string{"HOOKJET_DEFAULTS_RATE_LIMIT_RPS": "2.5"}, "", func(c *Config) any { return c.Defaults.RateLimit }, RateLimit{RPS: 2.5, Burst: 3}},
		{"bool", map[string]string{"HOOKJET_SECURITY_HTTPS_ONLY": "true"}, "", func(c *Config) any { return c.Security.HTTPSOnly }, true},
		{"list", map[string]string{"HOOKJET_SECURITY_ALLOW_CIDRS": "10.0.0.0/8, 192.168.0.0/16,"}, "security:\n  allow_cidrs: [1.0.0.0/8]\n", func(c *Config) any { return c.Security.AllowCIDRs }, []string{"10.0.0.0/8", "192.168.0.0/16"}},
		{"log level", map[string]string{"HOOKJET_LOG_LEVEL": "debug"}, "", func(c *Config) any { return c.Log.Level }, "debug"},
		{"empty means unset", map[string]string{"HOOKJET_LOG_LEVEL": ""}, "log:\n  level: warn\n", func(c *Config) any { return c.Log.Level }, "warn"},
		{"endpoints inherit env defaults", map[string]string{"HOOKJET_DEFAULTS_TIMEOUT": "3s"}, endpointYAML, func(c *Config) any { return c.Endpoints[0].Timeout }, 3 * time.Second},
		{"ordering", map[string]string{"HOOKJET_DEFAULTS_ORDERING": "key", "HOOKJET_DEFAULTS_ORDERING_ON_DEAD_LETTER": "hold"}, endpointYAML, func(c *Config) any { return c.Endpoints[0].Ordering + " " + c.Endpoints[0].OrderingOnDeadLetter }, "key hold"},
		{"endpoint override beats env default", map[string]string{"HOOKJET_DEFAULTS_TIMEOUT": "3s"}, endpointYAML + "    timeout: 4s\n", func(c *Config) any { return c.Endpoints[0].Timeout }, 4 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustParse(t, tt.file, tt.env)
			if got := tt.get(c); !equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func equal(a, b any) bool {
	if as, ok := a.([]string); ok {
		bs, ok := b.([]string)
		return ok && slices.Equal(as, bs)
	}
	return a == b
}

func TestEnvBadValues(t *testing.T) {
	tests := []struct {
		name, env, value, reason string
	}{
		{"int", "HOOKJET_WORKER_CONCURRENCY", "many", "want an integer"},
		{"octal-looking int is decimal", "HOOKJET_WORKER_CONCURRENCY", "0x10", "want an integer"},
		{"int overflow", "HOOKJET_STREAMS_MAX_BYTES", "99999999999999999999", "integer out of range"},
		{"duration without unit", "HOOKJET_DEDUPE_TTL", "60", "use a unit, e.g. 5s"},
		{"negative duration", "HOOKJET_DEFAULTS_RETRY_BASE", "-1s", "negative"},
		{"bool", "HOOKJET_SECURITY_ALLOW_PRIVATE_NETWORKS", "maybe", "want true or false"},
		{"float", "HOOKJET_DEFAULTS_RATE_LIMIT_RPS", "NaN", "finite"},
		{"secret indirection", "HOOKJET_NATS_TOKEN", "env:UNSET_VAR", "UNSET_VAR is empty or unset"},
		{"valid type, invalid value", "HOOKJET_LOG_FORMAT", "yaml", "must be text or json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseErr(t, "", map[string]string{tt.env: tt.value})
			key := tt.env
			if tt.name == "valid type, invalid value" {
				key = "log.format" // decoded fine; Validate names the key
			}
			wantKeyErr(t, err, key, tt.reason)
		})
	}
}

func TestEnvVars(t *testing.T) {
	vars := EnvVars()
	for _, want := range []string{
		"HOOKJET_DATA_DIR",
		"HOOKJET_NATS_URL",
		"HOOKJET_NATS_PASSWORD",
		"HOOKJET_STREAMS_DUPLICATE_WINDOW",
		"HOOKJET_ADMIN_TOKEN",
		"HOOKJET_ADMIN_TOKEN_FILE",
		"HOOKJET_LOG_LEVEL",
		"HOOKJET_SECURITY_ALLOW_CIDRS",
		"HOOKJET_DEFAULTS_RATE_LIMIT_BURST",
		"HOOKJET_DEFAULTS_RETRY_MAX_ATTEMPTS",
		"HOOKJET_DEFAULTS_BREAKER_SLOW_P95",
	} {
		if !slices.Contains(vars, want) {
			t.Errorf("EnvVars() lacks %s", want)
		}
	}
	for _, v := range vars {
		if slices.Contains([]string{"HOOKJET_ENDPOINTS", "HOOKJET_DEFAULTS_RATE_LIMIT", "HOOKJET_NATS"}, v) {
			t.Errorf("EnvVars() lists %s, which is not a scalar key", v)
		}
	}
	// Every listed variable is honoured: some value of the right type
	// changes the configuration.
	for _, v := range vars {
		t.Run(v, func(t *testing.T) {
			var accepted []string
			for _, val := range []string{"7", "7s", "true", "false"} {
				d := &decoder{getenv: envOf(map[string]string{v: val}), readFile: noFiles, lines: map[string]int{}}
				c := Default()
				d.applyEnv(reflect.ValueOf(&c).Elem(), "", "HOOKJET")
				if len(d.errs) > 0 {
					if d.errs[0].Key != v {
						t.Fatalf("error names %q, want %q", d.errs[0].Key, v)
					}
					continue
				}
				if !reflect.DeepEqual(c, Default()) {
					return
				}
				accepted = append(accepted, val)
			}
			if len(accepted) > 0 {
				t.Errorf("%s=%v changed nothing", v, accepted)
				return
			}
			t.Errorf("no value accepted for %s", v)
		})
	}
}

package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const hidden = "hunter2-do-not-print"

func TestSecretAccessors(t *testing.T) {
	s := NewSecret(hidden)
	if s.Reveal() != hidden {
		t.Errorf("Reveal() = %q", s.Reveal())
	}
	if s.IsZero() {
		t.Error("IsZero() of a set secret")
	}
	if !(Secret{}).IsZero() || !NewSecret("").IsZero() {
		t.Error("IsZero() of an empty secret is false")
	}
}

func TestSecretRedaction(t *testing.T) {
	s := NewSecret(hidden)
	c := Default()
	c.Admin.Token = s
	c.NATS.Password = s
	c.Endpoints = []Endpoint{{
		ID:      "a",
		Secrets: []Secret{s},
		Headers: map[string]Secret{"X-Key": s},
	}}
	ep := c.Endpoints[0]

	var jsonLog bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&jsonLog, nil))
	logger.Info("m", "secret", s, "config", c, "endpoint", ep, slog.Any("ptr", &c))
	var textLog bytes.Buffer
	slog.New(slog.NewTextHandler(&textLog, nil)).Info("m", "secret", s, "config", c)

	jsonBytes, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	text, err := s.MarshalText()
	if err != nil {
		t.Fatal(err)
	}

	outputs := map[string]string{
		"%v":            fmt.Sprintf("%v", s),
		"%s":            fmt.Sprintf("%s", s),
		"%q":            fmt.Sprintf("%q", s),
		"%x":            fmt.Sprintf("%x", s),
		"%d":            fmt.Sprintf("%d", s),
		"%+v":           fmt.Sprintf("%+v", s),
		"%#v":           fmt.Sprintf("%#v", s),
		"String":        s.String(),
		"GoString":      s.GoString(),
		"Sprint":        fmt.Sprint(s),
		"config %v":     fmt.Sprintf("%v", c),
		"config %+v":    fmt.Sprintf("%+v", c),
		"config %#v":    fmt.Sprintf("%#v", c),
		"config ptr %v": fmt.Sprintf("%+v", &c),
		"endpoint %+v":  fmt.Sprintf("%+v", ep),
		"endpoint %#v":  fmt.Sprintf("%#v", ep),
		"slog json":     jsonLog.String(),
		"slog text":     textLog.String(),
		"json.Marshal":  string(jsonBytes),
		"MarshalText":   string(text),
	}
	for name, out := range outputs {
		t.Run(name, func(t *testing.T) {
			if strings.Contains(out, hidden) {
				t.Errorf("leaks the secret: %s", out)
			}
			if !strings.Contains(out, "[redacted]") {
				t.Errorf("does not show [redacted]: %s", out)
			}
		})
	}
	var logged map[string]any
	if err := json.Unmarshal(jsonLog.Bytes(), &logged); err != nil {
		t.Fatalf("slog JSON output is not JSON: %v", err)
	}
	if logged["secret"] != "[redacted]" {
		t.Errorf(`slog "secret" = %v, want "[redacted]"`, logged["secret"])
	}
}

func TestSecretSources(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	emptyFile := filepath.Join(dir, "empty")
	if err := os.WriteFile(emptyFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile := filepath.Join(dir, "whsec")
	if err := os.WriteFile(secretFile, []byte(secretB+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"TOKEN": "from-env", "WH": secretA}

	tests := []struct {
		name, data string
		get        func(*Config) Secret
		want       string
		wantErr    string // substring of the admin.token / key error, if any
	}{
		{"literal", "admin:\n  token: plain\n", func(c *Config) Secret { return c.Admin.Token }, "plain", ""},
		{"env", "admin:\n  token: env:TOKEN\n", func(c *Config) Secret { return c.Admin.Token }, "from-env", ""},
		{"file trimmed", "admin:\n  token: file:" + tokenFile + "\n", func(c *Config) Secret { return c.Admin.Token }, "from-file", ""},
		{"token_file", "admin:\n  token_file: " + tokenFile + "\n", func(c *Config) Secret { return c.Admin.Token }, "from-file", ""},
		{"nats password from env", "nats:\n  user: u\n  password: env:TOKEN\n", func(c *Config) Secret { return c.NATS.Password }, "from-env", ""},
		{"endpoint secret from env", "endpoints:\n  - id: a\n    url: https://a.example.com/\n    secrets: [env:WH, 'file:" + secretFile + "']\n", func(c *Config) Secret { return c.Endpoints[0].Secrets[1] }, secretB, ""},
		{"header from file", endpointYAML + "    headers: {X-Key: 'file:" + tokenFile + "'}\n", func(c *Config) Secret { return c.Endpoints[0].Headers["X-Key"] }, "from-file", ""},
		{"empty file", "admin:\n  token: file:" + emptyFile + "\n", nil, "", "is empty"},
		{"empty token_file", "admin:\n  token_file: " + emptyFile + "\n", nil, "", "is empty"},
		{"missing file", "admin:\n  token: file:" + filepath.Join(dir, "nope") + "\n", nil, "", "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse([]byte(tt.data), envOf(env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("Parse error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := tt.get(c).Reveal(); got != tt.want {
				t.Errorf("secret = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSecretFileTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(path, bytes.Repeat([]byte("a"), maxSecretFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := readSecretFile(path); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("readSecretFile(too large) = %v", err)
	}
}

// TestDecodeSecret checks that config applies the signing package's rules
// (tested in full in package signature) and its sentinel.
func TestDecodeSecret(t *testing.T) {
	for _, ok := range []string{secretA, secretB, strings.TrimRight(secretB, "=")} {
		if _, err := DecodeSecret(ok); err != nil {
			t.Errorf("DecodeSecret(valid) = %v", err)
		}
	}
	for in, want := range map[string]string{
		"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw":            `must start with "whsec_"`,
		"whsec_" + strings.Repeat("AAAA", 7) + "AAA":  "decodes to 23 bytes",
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-_":      "bad base64",
		"whsec_" + strings.Repeat("AAAA", 21) + "AAA": "decodes to 65 bytes",
	} {
		_, err := DecodeSecret(in)
		if err == nil || !strings.Contains(err.Error(), want) || !errors.Is(err, ErrSecret) {
			t.Errorf("DecodeSecret(invalid) = %v, want an ErrSecret containing %q", err, want)
		}
	}
}

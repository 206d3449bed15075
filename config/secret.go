package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/hookjet/hookjet/signature"
)

// redacted is what every printed form of a [Secret] shows.
const redacted = "[redacted]"

// Secret holds a credential. Every way of printing it (fmt verbs including
// %#v and %d, log/slog, encoding/json, encoding.TextMarshaler users such as
// YAML encoders) shows "[redacted]"; only [Secret.Reveal] returns the value.
// The zero Secret is empty.
type Secret struct {
	v string
}

// NewSecret returns a Secret holding v.
func NewSecret(v string) Secret { return Secret{v: v} }

// Reveal returns the secret value. Call it only where the value is used, never
// to log or display it.
func (s Secret) Reveal() string { return s.v }

// IsZero reports whether the secret is empty.
func (s Secret) IsZero() bool { return s.v == "" }

// String returns "[redacted]".
func (s Secret) String() string { return redacted }

// GoString returns "[redacted]", so %#v does not show the value either.
func (s Secret) GoString() string { return redacted }

// Format writes "[redacted]" for every verb, so no fmt verb (%d, %x, %q, ...)
// reaches the value by reflection.
func (s Secret) Format(f fmt.State, _ rune) {
	_, _ = io.WriteString(f, redacted)
}

// LogValue implements [slog.LogValuer]: the logged value is "[redacted]".
func (s Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON returns the JSON string "[redacted]".
func (s Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText returns "[redacted]".
func (s Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// maxSecretFile bounds what a "file:" secret reads, so that a path such as
// /dev/zero cannot exhaust memory.
const maxSecretFile = 1 << 20

// readSecretFile reads a file holding a secret: at most maxSecretFile bytes,
// surrounding white space trimmed, not empty.
func readSecretFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }() // read-only: a close error loses nothing
	b, err := io.ReadAll(io.LimitReader(f, maxSecretFile+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxSecretFile {
		return "", fmt.Errorf("file %s is larger than %d bytes", path, maxSecretFile)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("file %s is empty", path)
	}
	return v, nil
}

// isReference reports whether a configured secret names where to read it
// ("env:NAME", "file:/path") rather than holding it.
func isReference(raw string) bool {
	return strings.HasPrefix(raw, "env:") || strings.HasPrefix(raw, "file:")
}

// resolveSecret turns a configured value into a Secret: "env:NAME" reads the
// environment variable NAME, "file:/path" reads the file, anything else is
// literal. Errors never contain the value.
func resolveSecret(raw string, getenv func(string) string, readFile func(string) (string, error)) (Secret, error) {
	switch {
	case strings.HasPrefix(raw, "env:"):
		name := strings.TrimPrefix(raw, "env:")
		if name == "" {
			return Secret{}, errors.New(`"env:" needs a variable name, e.g. env:HOOKJET_TOKEN`)
		}
		v := getenv(name)
		if v == "" {
			return Secret{}, fmt.Errorf("environment variable %s is empty or unset", name)
		}
		return NewSecret(v), nil
	case strings.HasPrefix(raw, "file:"):
		path := strings.TrimPrefix(raw, "file:")
		if path == "" {
			return Secret{}, errors.New(`"file:" needs a path, e.g. file:/run/secrets/token`)
		}
		v, err := readFile(path)
		if err != nil {
			return Secret{}, err
		}
		return NewSecret(v), nil
	default:
		return NewSecret(raw), nil
	}
}

// DecodeSecret decodes a webhook signing secret "whsec_<base64>" into the HMAC
// key with the rules of [signature.DecodeSecret], which the sender and the
// receiver-side verifier share: standard base64, with or without padding,
// decoding to 24..64 bytes. Errors wrap [ErrSecret] and never contain s.
func DecodeSecret(s string) ([]byte, error) { return signature.DecodeSecret(s) }

// SecretKeySize is the length of security.secret_key once decoded: an
// AES-256 key.
const SecretKeySize = 32

// DecodeSecretKey decodes security.secret_key: standard base64, with or
// without padding, of exactly [SecretKeySize] bytes. Errors never contain
// the key.
func DecodeSecretKey(s Secret) ([]byte, error) {
	v := strings.TrimSpace(s.Reveal())
	enc := base64.RawStdEncoding
	if strings.HasSuffix(v, "=") {
		enc = base64.StdEncoding
	}
	key, err := enc.DecodeString(v)
	if err != nil {
		return nil, fmt.Errorf("must be %d random bytes in base64 (openssl rand -base64 %d): %w", SecretKeySize, SecretKeySize, err)
	}
	if len(key) != SecretKeySize {
		return nil, fmt.Errorf("must decode to %d bytes (openssl rand -base64 %d), got %d", SecretKeySize, SecretKeySize, len(key))
	}
	return key, nil
}

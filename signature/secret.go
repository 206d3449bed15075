package signature

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// SecretPrefix starts every signing secret.
const SecretPrefix = "whsec_"

// Bounds of a decoded signing secret, in bytes, as the Standard Webhooks
// specification recommends.
const (
	MinSecretBytes = 24
	MaxSecretBytes = 64
)

// DecodeSecret decodes a signing secret into its HMAC key. The rules:
// surrounding white space is ignored; the secret starts with "whsec_"; the
// rest is standard base64, padded or not (padding, when present, must be
// right); it decodes to MinSecretBytes to MaxSecretBytes bytes. Errors wrap
// [ErrSecret] and never contain s.
func DecodeSecret(s string) ([]byte, error) {
	b64, ok := strings.CutPrefix(strings.TrimSpace(s), SecretPrefix)
	if !ok {
		return nil, fmt.Errorf("%w: must start with %q", ErrSecret, SecretPrefix)
	}
	enc := base64.RawStdEncoding
	if strings.HasSuffix(b64, "=") {
		enc = base64.StdEncoding
	}
	key, err := enc.DecodeString(b64)
	if err != nil {
		// The base64 error quotes an offset, never the input.
		return nil, fmt.Errorf("%w: bad base64 after %q: %w", ErrSecret, SecretPrefix, err)
	}
	if len(key) < MinSecretBytes || len(key) > MaxSecretBytes {
		return nil, fmt.Errorf("%w: decodes to %d bytes, want %d to %d", ErrSecret, len(key), MinSecretBytes, MaxSecretBytes)
	}
	return key, nil
}

package signature

import (
	"errors"
	"strings"
	"testing"
)

// The Standard Webhooks specification's example secret (24 bytes) and a
// padded 32-byte one.
const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB = "whsec_aG9va2pldC1zZWNyZXQtMzItYnl0ZXMtbG9uZy0wMTI="
)

func TestDecodeSecret(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantLen int
		wantErr string
	}{
		{"design example, 24 bytes", secretA, 24, ""},
		{"32 bytes padded", secretB, 32, ""},
		{"32 bytes unpadded", strings.TrimRight(secretB, "="), 32, ""},
		{"surrounding white space", " " + secretA + "\n", 24, ""},
		{"64 bytes", "whsec_" + strings.Repeat("AAAA", 21) + "AA", 64, ""},
		{"65 bytes", "whsec_" + strings.Repeat("AAAA", 21) + "AAA", 0, "decodes to 65 bytes"},
		{"23 bytes", "whsec_" + strings.Repeat("AAAA", 7) + "AAA", 0, "decodes to 23 bytes"},
		{"no prefix", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, `must start with "whsec_"`},
		{"wrong prefix case", "WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", 0, "must start"},
		{"empty", "", 0, "must start"},
		{"only prefix", "whsec_", 0, "decodes to 0 bytes"},
		{"url alphabet", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLa-_", 0, "bad base64"},
		{"bad padding", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw=", 0, "bad base64"},
		{"padded 23 bytes", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS=", 0, "decodes to 23 bytes"},
		{"space inside", "whsec_MfKQ9r8GKYqrTwjU PD8ILPZIo2LaLaSw", 0, "bad base64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := DecodeSecret(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("DecodeSecret error = %v, want %q", err, tt.wantErr)
				}
				if !errors.Is(err, ErrSecret) {
					t.Errorf("error does not wrap ErrSecret: %v", err)
				}
				if b64 := strings.TrimPrefix(tt.in, "whsec_"); len(b64) > 8 && strings.Contains(err.Error(), b64) {
					t.Errorf("error leaks the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("DecodeSecret: %v", err)
			}
			if len(key) != tt.wantLen {
				t.Errorf("key length = %d, want %d", len(key), tt.wantLen)
			}
		})
	}
}

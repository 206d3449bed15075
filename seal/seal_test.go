package seal

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/config"
)

func testBox(t *testing.T, fill byte) *Box {
	t.Helper()
	b, err := New(bytes.Repeat([]byte{fill}, 32))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	b := testBox(t, 1)
	for _, plain := range []string{"", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", strings.Repeat("x", 10000)} {
		sealed := b.Seal([]byte(plain), []byte("ep/secrets"))
		if plain != "" && bytes.Contains(sealed, []byte(plain)) {
			t.Fatal("sealed value contains the plaintext")
		}
		got, err := b.Open(sealed, []byte("ep/secrets"))
		if err != nil || string(got) != plain {
			t.Fatalf("Open = %q, %v", got, err)
		}
	}
	if bytes.Equal(b.Seal([]byte("a"), nil), b.Seal([]byte("a"), nil)) {
		t.Error("two seals of one value are equal: the nonce is not random")
	}
}

func TestOpenRefuses(t *testing.T) {
	b := testBox(t, 1)
	sealed := b.Seal([]byte("whsec_secret"), []byte("a/secrets"))
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 1
		return c
	}
	tests := []struct {
		name    string
		box     *Box
		sealed  []byte
		context string
	}{
		{"other key", testBox(t, 2), sealed, "a/secrets"},
		{"other context", b, sealed, "b/secrets"},
		{"version changed", b, flip(0), "a/secrets"},
		{"nonce changed", b, flip(3), "a/secrets"},
		{"ciphertext changed", b, flip(len(sealed) - 20), "a/secrets"},
		{"tag changed", b, flip(len(sealed) - 1), "a/secrets"},
		{"truncated", b, sealed[:len(sealed)-1], "a/secrets"},
		{"empty", b, nil, "a/secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.box.Open(tt.sealed, []byte(tt.context))
			if !errors.Is(err, ErrOpen) || got != nil {
				t.Errorf("Open = %q, %v; want ErrOpen", got, err)
			}
		})
	}
}

func TestNewRefusesShortKey(t *testing.T) {
	if _, err := New(make([]byte, 16)); !errors.Is(err, ErrKey) {
		t.Errorf("err = %v", err)
	}
}

func TestLoadSecretKey(t *testing.T) {
	t.Run("configured", func(t *testing.T) {
		cfg := config.Default()
		cfg.Security.SecretKey = config.NewSecret(base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, 32)))
		key, err := LoadSecretKey(&cfg)
		if err != nil || !bytes.Equal(key, bytes.Repeat([]byte{7}, 32)) {
			t.Fatalf("key %x, %v", key, err)
		}
	})
	t.Run("required with nats.url", func(t *testing.T) {
		cfg := config.Default()
		cfg.NATS.URL = "nats://127.0.0.1:4222"
		cfg.DataDir = t.TempDir()
		_, err := LoadSecretKey(&cfg)
		fe, ok := errors.AsType[*config.FieldError](err)
		if !ok || fe.Key != "security.secret_key" || !errors.Is(err, config.ErrInvalid) {
			t.Fatalf("err = %v", err)
		}
		if _, err := os.Stat(filepath.Join(cfg.DataDir, KeyFile)); !errors.Is(err, os.ErrNotExist) {
			t.Error("a key file was generated with nats.url")
		}
	})
	t.Run("generated once in embedded mode", func(t *testing.T) {
		cfg := config.Default()
		cfg.DataDir = filepath.Join(t.TempDir(), "data")
		first, err := LoadSecretKey(&cfg)
		if err != nil || len(first) != 32 {
			t.Fatalf("key %d bytes, %v", len(first), err)
		}
		st, err := os.Stat(filepath.Join(cfg.DataDir, KeyFile))
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("key file %v, %v", st, err)
		}
		again, err := LoadSecretKey(&cfg)
		if err != nil || !bytes.Equal(first, again) {
			t.Error("second load returned another key")
		}
	})
	t.Run("bad key file", func(t *testing.T) {
		cfg := config.Default()
		cfg.DataDir = t.TempDir()
		if err := os.WriteFile(filepath.Join(cfg.DataDir, KeyFile), []byte("short"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadSecretKey(&cfg); err == nil || !strings.Contains(err.Error(), KeyFile) {
			t.Errorf("err = %v, want one naming the file", err)
		}
	})
}

func ExampleBox() {
	box, _ := New(bytes.Repeat([]byte{1}, 32))
	sealed := box.Seal([]byte("whsec_..."), []byte("crm/secrets/0"))
	plain, _ := box.Open(sealed, []byte("crm/secrets/0"))
	_, err := box.Open(sealed, []byte("billing/secrets/0"))
	fmt.Println(string(plain), errors.Is(err, ErrOpen))
	// Output: whsec_... true
}

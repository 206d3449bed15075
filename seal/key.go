package seal

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/durable"
)

// KeyFile is the file under data_dir that holds the generated key in
// embedded mode.
const KeyFile = "secret.key"

// LoadSecretKey returns the 32-byte key that seals API endpoints' secrets:
// security.secret_key when set; otherwise, with the embedded server (no
// nats.url), the key in <data_dir>/secret.key, generated with mode 0600 the
// first time; with nats.url and no key, an error naming
// security.secret_key, since every process must share the key. Errors
// about the configuration are [*config.FieldError]s wrapping
// [config.ErrInvalid]; none contains the key.
func LoadSecretKey(cfg *config.Config) ([]byte, error) {
	const field = "security.secret_key"
	if !cfg.Security.SecretKey.IsZero() {
		key, err := config.DecodeSecretKey(cfg.Security.SecretKey)
		if err != nil {
			return nil, &config.FieldError{Key: field, Err: err}
		}
		return key, nil
	}
	if cfg.NATS.URL != "" {
		return nil, &config.FieldError{Key: field, Err: errors.New("required with nats.url: every hookjet process must share it (openssl rand -base64 32)")}
	}
	path := filepath.Join(cfg.DataDir, KeyFile)
	key, err := readKeyFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		key, err = createKeyFile(path)
		if errors.Is(err, fs.ErrExist) { // another process won the race
			key, err = readKeyFile(path)
		}
	}
	if err != nil {
		return nil, err
	}
	return key, nil
}

// readKeyFile reads a base64 key from path.
func readKeyFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	key, err := config.DecodeSecretKey(config.NewSecret(string(b)))
	if err != nil {
		return nil, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return key, nil
}

// createKeyFile writes a new random key to path, mode 0600, refusing to
// replace an existing file. The file and its directory are fsynced before
// the key is used: API endpoints sealed with a key a power cut then took
// away could never be opened again.
func createKeyFile(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	key := make([]byte, config.SecretKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	if err := durable.CreateFile(path, []byte(base64.StdEncoding.EncodeToString(key)+"\n"), 0o600); err != nil {
		return nil, fmt.Errorf("secret key %s: %w", path, err)
	}
	return key, nil
}

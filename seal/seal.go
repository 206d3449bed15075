package seal

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
)

// ErrOpen is returned by [Box.Open] for a value that was not sealed by this
// key with this context, or was changed since.
var ErrOpen = errors.New("sealed value does not open: wrong key, wrong context or tampered")

// ErrKey is wrapped by [New] for a key that is not 32 bytes.
var ErrKey = errors.New("seal key must be 32 bytes")

// version starts every sealed value, so that the format can change.
const version byte = 1

// nonceSize is GCM's standard nonce length.
const nonceSize = 12

// Box seals and opens values with one key. It is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key (AES-256).
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("%w, got %d", ErrKey, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plaintext, binding it to context.
func (b *Box) Seal(plaintext, context []byte) []byte {
	out := make([]byte, 1+nonceSize, 1+nonceSize+len(plaintext)+b.aead.Overhead())
	out[0] = version
	_, _ = rand.Read(out[1:]) // crypto/rand.Read never fails
	return b.aead.Seal(out, out[1:1+nonceSize], plaintext, context)
}

// Open decrypts a value from [Box.Seal] with the same context. Errors wrap
// [ErrOpen] and never contain the value.
func (b *Box) Open(sealed, context []byte) ([]byte, error) {
	if len(sealed) < 1+nonceSize+b.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[1:1+nonceSize], sealed[1+nonceSize:], context)
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

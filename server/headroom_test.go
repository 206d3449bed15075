package server

import (
	"errors"
	"strings"
	"testing"

	"github.com/hookjet/hookjet/config"
)

// An event near security.max_payload_bytes must still fit
// the server's max_payload once hookjet adds its task and dead-letter
// headers; a configuration where it cannot is refused, naming the key.
func TestPayloadHeadroomForHookjetHeaders(t *testing.T) {
	cfg := config.Default()
	cfg.Security.MaxPayloadBytes = 1 << 20
	if err := checkPayloadHeadroom(&cfg, 8<<20); err != nil {
		t.Fatalf("8 MiB server: %v", err)
	}
	err := checkPayloadHeadroom(&cfg, 1<<20)
	if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), "security.max_payload_bytes") {
		t.Fatalf("1 MiB server: %v", err)
	}
}

package config

import (
	"errors"
	"strings"
	"testing"
)

// A HOOKJET_* variable that is no configuration key is an
// error naming it and the key it is closest to; known ones and other
// prefixes pass.
func TestCheckEnv(t *testing.T) {
	err := CheckEnv([]string{"HOOKJET_ADMIN_TOKN=abc", "HOOKJET_ADMIN_TOKEN=x", "HOOKJET_CONFIG=/etc/h.yaml", "HOME=/root", "HOOKJET_ZZZZZZZZZZZZ=1"}, "HOOKJET_CONFIG")
	var fes []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var fe *FieldError
		if !errors.As(e, &fe) || !errors.Is(e, ErrInvalid) {
			t.Fatalf("%v is not a FieldError wrapping ErrInvalid", e)
		}
		fes = append(fes, fe.Key)
	}
	if strings.Join(fes, " ") != "HOOKJET_ADMIN_TOKN HOOKJET_ZZZZZZZZZZZZ" {
		t.Fatalf("unknown variables %v", fes)
	}
	if !strings.Contains(err.Error(), "did you mean HOOKJET_ADMIN_TOKEN?") {
		t.Errorf("no suggestion: %v", err)
	}
	if err := CheckEnv([]string{"HOOKJET_NATS_URL=nats://x", "HOOKJET_DEFAULTS_RETRY_MAX_ATTEMPTS=3", "PATH=/bin"}); err != nil {
		t.Errorf("known variables refused: %v", err)
	}
}

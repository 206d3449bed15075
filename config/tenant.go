package config

import (
	"errors"
	"fmt"
)

// MaxTenantLen bounds a tenant name, on an endpoint, a portal session and an
// event (header Hookjet-Tenant).
const MaxTenantLen = 1024

// CheckTenant checks a tenant name: the character set of endpoint ids
// ([a-z0-9_-]), at most MaxTenantLen bytes. The same rule holds for an
// endpoint's tenant, a portal session's and an event's, so a tenant named
// on one always matches the others byte for byte. Errors quote at most the
// first 64 bytes of the name.
func CheckTenant(t string) error {
	if t == "" {
		return errors.New("is empty")
	}
	if len(t) > MaxTenantLen {
		return fmt.Errorf("must be at most %d bytes, got %d", MaxTenantLen, len(t))
	}
	for i := range len(t) {
		c := t[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' && c != '-' {
			return fmt.Errorf("%.64q may contain only a-z, 0-9, _ and - (the characters of endpoint ids)", t)
		}
	}
	return nil
}

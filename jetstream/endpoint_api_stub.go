package jetstream

// TEMPORARY: this file gives the current Dispatcher the methods the admin
// API's endpoint management needs (admin.Deliveries), so that the endpoint store, routes and CLI build and
// test before the new delivery engine lands. The new engine implements them
// for real; delete this file then.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookjet/hookjet/config"
)

// ConfigEndpoint returns the config-file endpoint id. TEMPORARY.
func (d *Dispatcher) ConfigEndpoint(id string) (config.Endpoint, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, ep := range d.cfg.Endpoints {
		if ep.ID == id {
			return ep, true
		}
	}
	return config.Endpoint{}, false
}

// SendTest is not supported by this engine. TEMPORARY.
func (d *Dispatcher) SendTest(_ context.Context, endpointID string) (string, error) {
	return "", fmt.Errorf("test event to %s: %w by this delivery engine", endpointID, errors.ErrUnsupported)
}

// Redeliver is not supported by this engine. TEMPORARY.
func (d *Dispatcher) Redeliver(_ context.Context, endpointID string, _, _ time.Time, _ bool) (int, int, error) {
	return 0, 0, fmt.Errorf("redeliver to %s: %w by this delivery engine", endpointID, errors.ErrUnsupported)
}

// Discard discards nothing: this engine never delivers to API endpoints.
// TEMPORARY.
func (d *Dispatcher) Discard(_ context.Context, endpointID string) (int, error) {
	if strings.TrimSpace(endpointID) == "" {
		return 0, fmt.Errorf("%w: no endpoint id", ErrBadRequest)
	}
	return 0, nil
}

package test

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/client"
	"github.com/hookjet/hookjet/config"
)

// TestAdminServesOpenAPIDocument: GET /api/v1/openapi.json serves the
// document kept in the repository (api/openapi.json), behind the token like
// every API route, and the typed client's errors carry the status, the
// server's message and the api error kind.
func TestAdminServesOpenAPIDocument(t *testing.T) {
	const token = "admintoken-0123456789"
	cfg := testConfig(t, t.TempDir(), "")
	cfg.Admin.Token = config.NewSecret(token)
	h := startHookjet(t, cfg, cli.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	base := "http://" + h.srv.AdminAddr()

	c := client.New(base, client.WithToken(token))
	doc, err := c.OpenAPI(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(doc, api.OpenAPI()) {
		t.Errorf("served document (%d bytes) differs from api/openapi.json (%d bytes)", len(doc), len(api.OpenAPI()))
	}

	_, err = client.New(base).OpenAPI(ctx)
	if ce, ok := errors.AsType[*client.Error](err); !ok || ce.Status != http.StatusUnauthorized || ce.Message == "" {
		t.Errorf("without the token: got %v, want a 401 *client.Error with the server's message", err)
	}

	_, err = c.Endpoint(ctx, "nope")
	ce, ok := errors.AsType[*client.Error](err)
	if !ok || ce.Status != http.StatusNotFound || !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Errorf("unknown endpoint: got %v (%T), want a 404 *client.Error matching api.ErrUnknownEndpoint", err, err)
	}

	_, err = c.CreateEndpoint(ctx, map[string]any{"url": "http://127.0.0.1:1/hooks", "retry": map[string]any{"max_attempts": "four"}})
	if ce, ok := errors.AsType[*client.Error](err); !ok || ce.Field != "retry.max_attempts" || !errors.Is(err, api.ErrBadRequest) {
		t.Errorf("bad field: got %v, want a 400 naming retry.max_attempts, matching api.ErrBadRequest", err)
	}
}

package test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
)

// Where deliveries may reach private networks, a customer's endpoint URL
// can point at an internal service; the portal then never shows the
// response bodies its deliveries got back (the operator's API still does).
func TestPortalHidesResponsesFromPrivateAddresses(t *testing.T) {
	const internal = "internal-admin-panel: db-primary.corp stack trace"
	rcv := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, _ delivery) {
		w.WriteHeader(http.StatusBadRequest) // permanent: one attempt, then the DLQ
		_, _ = io.WriteString(w, internal)
	})
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "acme-crm", URL: rcv.URL, Events: []string{"order.*"}, Extra: "    tenant: acme\n"})
	cfg.Admin.Token = config.NewSecret(consoleToken)
	h := startHookjet(t, cfg, cli.Options{})
	h.publishFor("acme", "order.created", "ord-1", []byte(`{"n":1}`))
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		var out struct {
			Entries []struct {
				LastResponse string `json:"last_response"`
			} `json:"entries"`
		}
		if code := h.api("GET", "/api/v1/dlq?endpoint=acme-crm", consoleToken, nil, &out); code != 200 || len(out.Entries) == 0 || out.Entries[0].LastResponse == "" {
			return fmt.Errorf("no dead letter with its response yet (HTTP %d, %+v)", code, out)
		}
		return nil
	})
	link := portalLink(t, h, map[string]any{"tenant": "acme", "ttl": "10m"})
	resp, err := http.Get(strings.TrimSuffix(link, "/") + "/endpoints/acme-crm")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("portal endpoint page: HTTP %d", resp.StatusCode)
	}
	if strings.Contains(string(page), "internal-admin-panel") {
		t.Errorf("the portal shows the response of a loopback receiver: %s", internal)
	}
	if !strings.Contains(string(page), "Response bodies are not shown") {
		t.Error("the portal does not say why responses are missing")
	}
}

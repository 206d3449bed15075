package test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hookjet/hookjet/cli"
	"github.com/hookjet/hookjet/config"
)

// idInbox records the webhook-ids an HTTP endpoint receives, signed or not.
type idInbox struct {
	URL string
	mu  sync.Mutex
	ids []string
}

func newIDInbox(t *testing.T) *idInbox {
	in := &idInbox{}
	in.URL = newPlainServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		in.mu.Lock()
		in.ids = append(in.ids, r.Header.Get("webhook-id"))
		in.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return in
}

// got returns the distinct ids received, sorted.
func (in *idInbox) got() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := slices.Clone(in.ids)
	slices.Sort(out)
	return slices.Compact(out)
}

func (in *idInbox) has(id string) bool { return slices.Contains(in.got(), id) }

// createPortalEndpoint creates an endpoint through the portal link's form,
// as a tenant would, and returns the HTTP status.
func createPortalEndpoint(t *testing.T, link, origin, endpointURL, events string) int {
	t.Helper()
	code, _ := createPortalEndpointPage(t, link, origin, endpointURL, events)
	return code
}

// createPortalEndpointPage is createPortalEndpoint, returning the page
// answered too.
func createPortalEndpointPage(t *testing.T, link, origin, endpointURL, events string) (int, string) {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	form := url.Values{"csrf": {csrfOf(t, string(page))}, "url": {endpointURL}, "events": {events}}
	req, _ := http.NewRequest("POST", strings.TrimSuffix(link, "/")+"/endpoints", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", origin)
	cresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(cresp.Body)
	cresp.Body.Close()
	return cresp.StatusCode, string(answer)
}

// With the real binary: two tenants with an endpoint each for order.*, an
// operator endpoint without a tenant for ">", and an endpoint tenant globex
// created in its portal for ">". Events published with `hookjet publish
// --tenant` reach their tenant's endpoints and the operator's; events
// without a tenant reach only the operator's.
func TestBinaryTenantRouting(t *testing.T) {
	ops, acme, globex, globexPortal := newIDInbox(t), newIDInbox(t), newIDInbox(t), newIDInbox(t)
	dir := t.TempDir()
	natsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	adminAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cfg := fmt.Sprintf(`data_dir: %s
nats:
  listen: %s
admin:
  listen: %s
log:
  format: json
security:
  allow_private_networks: true
portal:
  allow_private_networks: true
defaults:
  timeout: 2s
  retry: {base: 50ms, cap: 500ms, max_attempts: 5, max_age: 1h}
endpoints:
  - {id: ops, url: %q, secrets: [%s], events: [">"]}
  - {id: acme-crm, url: %q, secrets: [%s], events: ["order.*"], tenant: acme}
  - {id: globex-crm, url: %q, secrets: [%s], events: ["order.*"], tenant: globex}
`, filepath.Join(dir, "data"), natsAddr, adminAddr, ops.URL, secretA, acme.URL, secretA, globex.URL, secretA)
	cfgPath := filepath.Join(dir, "hookjet.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	startBinary(t, cfgPath, adminAddr, "HOOKJET_ADMIN_TOKEN="+consoleToken)

	// A portal session of globex creates an endpoint for everything.
	sess, err := http.NewRequest("POST", "http://"+adminAddr+"/api/v1/portal/sessions", strings.NewReader(`{"tenant":"globex","ttl":"10m"}`))
	if err != nil {
		t.Fatal(err)
	}
	sess.Header.Set("Authorization", "Bearer "+consoleToken)
	sess.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(sess)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		URL string `json:"url"`
	}
	err = json.NewDecoder(resp.Body).Decode(&out)
	resp.Body.Close()
	link := out.URL
	if resp.StatusCode != http.StatusCreated || err != nil || link == "" {
		t.Fatalf("portal session: %d %v", resp.StatusCode, err)
	}
	if code := createPortalEndpoint(t, link, "http://"+adminAddr, globexPortal.URL, ">"); code >= 400 {
		t.Fatalf("portal create: HTTP %d", code)
	}
	time.Sleep(2500 * time.Millisecond) // applied everywhere within 2 s

	publish := func(tenant, typ, id string) {
		t.Helper()
		args := []string{"publish", typ, "--id", id, "--config", cfgPath}
		if tenant != "" {
			args = append(args, "--tenant", tenant)
		}
		if out, err := exec.Command(hookjetBinary(t), args...).CombinedOutput(); err != nil {
			t.Fatalf("hookjet %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	publish("acme", "order.created", "acme-1")
	publish("globex", "order.created", "globex-1")
	publish("globex", "invoice.paid", "globex-2")
	publish("", "order.created", "untagged-1")
	// Markers last, one per audience: what was published before has had
	// their whole trip to turn up.
	publish("acme", "order.done", "mark-acme")
	publish("globex", "order.done", "mark-globex")
	publish("", "order.done", "mark-none")
	checkFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		for name, w := range map[string]struct {
			in *idInbox
			id string
		}{"ops": {ops, "mark-none"}, "ops/acme": {ops, "mark-acme"}, "ops/globex": {ops, "mark-globex"},
			"acme-crm": {acme, "mark-acme"}, "globex-crm": {globex, "mark-globex"}, "globex portal": {globexPortal, "mark-globex"}} {
			if !w.in.has(w.id) {
				return fmt.Errorf("%s has not got %s", name, w.id)
			}
		}
		return nil
	})
	for name, tt := range map[string]struct {
		in   *idInbox
		want []string
	}{
		"ops (no tenant, >)":           {ops, []string{"acme-1", "globex-1", "globex-2", "mark-acme", "mark-globex", "mark-none", "untagged-1"}},
		"acme-crm (acme, order.*)":     {acme, []string{"acme-1", "mark-acme"}},
		"globex-crm (globex, order.*)": {globex, []string{"globex-1", "mark-globex"}},
		"globex portal (globex, >)":    {globexPortal, []string{"globex-1", "globex-2", "mark-globex"}},
	} {
		if got := tt.in.got(); !slices.Equal(got, tt.want) {
			t.Errorf("%s received %v, want exactly %v", name, got, tt.want)
		}
	}
}

// A portal session of tenant mallory creates an endpoint for ">": it gets
// none of tenant acme's events (the probe's scenario, with the event naming
// its tenant as the contract asks).
func TestPortalEndpointNeverReceivesAnotherTenantsEvents(t *testing.T) {
	acme := newReceiver(t, []string{secretA, secretB}, nil)
	mallory := newIDInbox(t)
	cfg := testConfig(t, t.TempDir(), "", endpointYAML{ID: "acme-crm", URL: acme.URL, Events: []string{"order.*"}, Extra: "    tenant: acme\n"})
	cfg.Admin.Token = config.NewSecret(consoleToken)
	h := startHookjet(t, cfg, cli.Options{})
	link := portalLink(t, h, map[string]any{"tenant": "mallory", "ttl": "10m"})
	if code := createPortalEndpoint(t, link, "http://"+h.srv.AdminAddr(), mallory.URL, ">"); code >= 400 {
		t.Fatalf("portal create: HTTP %d", code)
	}
	time.Sleep(2500 * time.Millisecond) // applied everywhere within 2 s
	h.publishFor("acme", "order.created", "acme-order-1", []byte(`{"card_last4":"4242"}`))
	h.publish("order.created", "untagged-1", []byte(`{}`))
	h.publishFor("mallory", "order.created", "mallory-1", []byte(`{}`))
	acme.waitFor(t, "acme-order-1")
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if !mallory.has("mallory-1") {
			return fmt.Errorf("mallory's own event has not arrived")
		}
		return nil
	})
	if got := mallory.got(); !slices.Equal(got, []string{"mallory-1"}) {
		t.Errorf("mallory's portal endpoint received %v, want only its own mallory-1", got)
	}
	if acme.requestsFor("untagged-1") != 0 || acme.requestsFor("mallory-1") != 0 {
		t.Errorf("acme-crm received an event without a tenant or of mallory")
	}
}

// An endpoint with a tenant dials through the strict SSRF guard: with
// security.allow_private_networks on and portal.allow_private_networks off,
// the portal refuses to create one at a loopback URL (400, in the
// customer's words), and the config file's, which is not refused, has its
// delivery refused and dead-lettered (rejected, the reason naming the key
// for the operator, not for the customer) while the operator's endpoint at
// the same address is delivered to; with portal.allow_private_networks on
// the portal's is created and delivered to.
func TestTenantEndpointObeysStrictSSRFGuard(t *testing.T) {
	for _, open := range []bool{false, true} {
		t.Run(fmt.Sprintf("portal.allow_private_networks=%v", open), func(t *testing.T) {
			ops, tenant := newIDInbox(t), newIDInbox(t)
			eps := []endpointYAML{{ID: "ops", URL: ops.URL, Events: []string{"order.*"}}}
			if !open {
				eps = append(eps, endpointYAML{ID: "acme-file", URL: tenant.URL, Events: []string{"order.*"}, Extra: "    tenant: acme\n"})
			}
			cfg := testConfig(t, t.TempDir(), fmt.Sprintf("portal:\n  allow_private_networks: %v\n", open), eps...)
			cfg.Admin.Token = config.NewSecret(consoleToken)
			h := startHookjet(t, cfg, cli.Options{})
			link := portalLink(t, h, map[string]any{"tenant": "acme", "ttl": "10m"})
			code, page := createPortalEndpointPage(t, link, "http://"+h.srv.AdminAddr(), tenant.URL, "order.*")
			switch {
			case open && code >= 400:
				t.Fatalf("portal create: HTTP %d", code)
			case !open && (code != http.StatusBadRequest || !strings.Contains(page, "loopback") || strings.Contains(page, "portal.allow_private_networks")):
				t.Fatalf("portal create at a loopback URL: HTTP %d, want 400 saying why in the customer's words:\n%s", code, page)
			}
			time.Sleep(2500 * time.Millisecond)
			h.publishFor("acme", "order.created", "acme-1", []byte(`{}`))
			checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
				if !ops.has("acme-1") {
					return fmt.Errorf("the operator's endpoint has not got acme-1")
				}
				if open && !tenant.has("acme-1") {
					return fmt.Errorf("the tenant's endpoint has not got acme-1")
				}
				if !open && len(h.dlq("?ids=acme-1")) == 0 {
					return fmt.Errorf("no dead letter of acme-1 yet")
				}
				return nil
			})
			if open {
				return
			}
			if got := tenant.got(); len(got) != 0 {
				t.Errorf("the tenant's endpoint at a loopback address received %v", got)
			}
			dl := h.dlq("?ids=acme-1")
			if len(dl) != 1 || dl[0].Reason != "rejected" || !strings.Contains(dl[0].LastError, "loopback") || !strings.Contains(dl[0].LastError, "portal.allow_private_networks") {
				t.Errorf("dead letters %+v: want one, reason rejected, naming the loopback address and portal.allow_private_networks", dl)
			}
			resp, err := http.Get(strings.TrimSuffix(link, "/") + "/endpoints/acme-file")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "loopback") || strings.Contains(string(body), "portal.allow_private_networks") {
				t.Errorf("the portal's page of acme-file: HTTP %d, want the refusal in the customer's words (no portal.allow_private_networks):\n%s", resp.StatusCode, body)
			}
		})
	}
}

// An API endpoint deleted and created again with the same id for another
// tenant: the old one's dead letters are not listed, counted or replayed
// for the new one (API, stats, endpoint object, portal), and the API lists
// them with deleted=true.
func TestDeletedEndpointsDeadLettersStayWithIt(t *testing.T) {
	acme := newReceiver(t, []string{secretA, secretB}, func(w http.ResponseWriter, d delivery) {
		w.WriteHeader(http.StatusBadRequest) // permanent: straight to the DLQ
	})
	mallory := newIDInbox(t)
	cfg := testConfig(t, t.TempDir(), "")
	cfg.Admin.Token = config.NewSecret(consoleToken)
	h := startHookjet(t, cfg, cli.Options{})
	create := func(tenant, u string) {
		body := map[string]any{"id": "shared", "url": u, "events": []string{"invoice.*"}, "tenant": tenant, "secrets": []string{secretA, secretB}}
		if code := h.api("POST", "/api/v1/endpoints", consoleToken, body, nil); code != http.StatusCreated {
			t.Fatalf("create shared for %s: %d", tenant, code)
		}
		time.Sleep(2500 * time.Millisecond)
	}
	create("acme", acme.URL)
	h.publishFor("acme", "invoice.paid", "acme-inv-1", []byte(`{"amount":1234}`))
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if len(h.dlq("?endpoint=shared")) == 0 {
			return fmt.Errorf("no dead letter yet")
		}
		return nil
	})
	if code := h.api("DELETE", "/api/v1/endpoints/shared", consoleToken, nil, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	time.Sleep(2500 * time.Millisecond)
	create("mallory", mallory.URL)

	if got := h.dlq("?endpoint=shared"); len(got) != 0 {
		t.Errorf("the new endpoint shared lists the deleted one's dead letters: %+v", got)
	}
	var ep struct {
		DeadLetters int `json:"dead_letters"`
	}
	h.api("GET", "/api/v1/endpoints/shared", consoleToken, nil, &ep)
	var list struct {
		Endpoints []struct {
			ID          string `json:"id"`
			DeadLetters int    `json:"dead_letters"`
		} `json:"endpoints"`
	}
	h.api("GET", "/api/v1/endpoints", consoleToken, nil, &list)
	if ep.DeadLetters != 0 || len(list.Endpoints) != 1 || list.Endpoints[0].DeadLetters != 0 {
		t.Errorf("dead_letters of the new endpoint: %d, in the list %+v; want 0", ep.DeadLetters, list.Endpoints)
	}
	var statsAny any
	h.api("GET", "/api/v1/dlq/stats", consoleToken, nil, &statsAny)
	if s := fmt.Sprint(statsAny); strings.Contains(s, "shared") {
		t.Errorf("dlq stats count the deleted endpoint's dead letters for shared: %s", s)
	}
	var deleted struct {
		Entries []struct {
			EventID           string `json:"event_id"`
			Tenant            string `json:"tenant"`
			EndpointCreatedAt string `json:"endpoint_created_at"`
		} `json:"entries"`
	}
	if code := h.api("GET", "/api/v1/dlq?endpoint=shared&deleted=true", consoleToken, nil, &deleted); code != http.StatusOK {
		t.Fatalf("deleted=true: HTTP %d", code)
	}
	if len(deleted.Entries) != 1 || deleted.Entries[0].EventID != "acme-inv-1" || deleted.Entries[0].Tenant != "acme" || deleted.Entries[0].EndpointCreatedAt == "" {
		t.Errorf("deleted=true lists %+v, want acme-inv-1 of tenant acme with its endpoint's created_at", deleted.Entries)
	}

	// The new tenant's portal neither shows nor replays them.
	link := portalLink(t, h, map[string]any{"tenant": "mallory", "ttl": "10m"})
	resp, err := http.Get(strings.TrimSuffix(link, "/") + "/endpoints/shared")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(page), "acme-inv-1") {
		t.Error("mallory's portal page of endpoint shared shows acme-inv-1")
	}
	var res struct {
		Matched  int `json:"matched"`
		Replayed int `json:"replayed"`
	}
	if code := h.api("POST", "/api/v1/dlq/replay", consoleToken, map[string]any{"endpoint": "shared"}, &res); code != http.StatusOK || res.Matched != 0 {
		t.Errorf("replay of endpoint shared: HTTP %d %+v, want nothing matched", code, res)
	}
	h.publishFor("mallory", "invoice.paid", "mallory-inv-1", []byte(`{}`))
	checkFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if !mallory.has("mallory-inv-1") {
			return fmt.Errorf("mallory's own event has not arrived")
		}
		return nil
	})
	if got := mallory.got(); !slices.Equal(got, []string{"mallory-inv-1"}) {
		t.Errorf("mallory received %v, want only mallory-inv-1", got)
	}
}

package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
)

const (
	secretA    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	headerVal  = "credential-in-a-header"
	configPath = "/etc/hookjet/hookjet.yaml"
)

// engine is a small implementation of Deliveries and of the Backend methods
// endpoint management reads, recording what it was asked.
type engine struct {
	Backend // the methods these tests never call

	mu        sync.Mutex
	calls     []string
	discarded int
	fail      error
	pages     []string // tenant|after|limit of each EndpointPage call
	applies   []string // Applied and Removed calls
}

func (e *engine) record(format string, args ...any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.calls = append(e.calls, fmt.Sprintf(format, args...))
}

func (e *engine) SendTest(_ context.Context, id, typ string, data []byte) (string, error) {
	if typ != "" {
		e.record("test %s %s %s", id, typ, data)
		return "evt_1", e.fail
	}
	e.record("test %s", id)
	return "evt_1", e.fail
}

func (e *engine) Redeliver(_ context.Context, id string, since, until time.Time, dry bool) (int, int, error) {
	e.record("redeliver %s %s %s %v", id, since.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), dry)
	return 7, 5, e.fail
}

func (e *engine) Discard(_ context.Context, id string) (int, error) {
	e.record("discard %s", id)
	return e.discarded, nil
}

// Applied and Removed are recorded apart from calls: every write makes one.
func (e *engine) Applied(_ context.Context, rec jetstream.EndpointRecord) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applies = append(e.applies, fmt.Sprintf("applied %s %d", rec.ID, rec.Revision))
	return nil
}

func (e *engine) Removed(id string, rev uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.applies = append(e.applies, fmt.Sprintf("removed %s %d", id, rev))
}

func (e *engine) Applies() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.applies...)
}

func (e *engine) ConfigEndpoint(id string) (config.Endpoint, bool) {
	if id == "crm" {
		return config.Endpoint{ID: "crm", Source: config.SourceConfig}, true
	}
	return config.Endpoint{}, false
}

func (e *engine) Endpoint(_ context.Context, id string) (api.EndpointStatus, error) {
	return api.EndpointStatus{}, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
}

func (e *engine) EndpointPage(_ context.Context, tenant, after string, limit int) ([]api.EndpointStatus, string, error) {
	e.mu.Lock()
	e.pages = append(e.pages, fmt.Sprintf("%s|%s|%d", tenant, after, limit))
	e.mu.Unlock()
	return []api.EndpointStatus{{ID: "a"}}, "a", nil
}

func (e *engine) Calls() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.calls...)
}

// fixture is the admin API on a real endpoint store in an embedded
// nats-server.
type fixture struct {
	srv   *httptest.Server
	store *jetstream.EndpointStore
	eng   *engine
	kv    natsjs.KeyValue
	now   time.Time
	cfg   config.Config
	// client, when set, makes the requests of do.
	client *http.Client
}

func newFixture(t *testing.T, opts ...Option) *fixture {
	t.Helper()
	ns, err := jetstream.StartEmbedded(config.NATS{Listen: "127.0.0.1:-1"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{eng: &engine{discarded: 3}, now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), cfg: config.Default()}
	f.store, err = jetstream.OpenEndpointStore(t.Context(), js, bytes.Repeat([]byte{9}, 32), 1,
		jetstream.StoreClock(func() time.Time { return f.now }))
	if err != nil {
		t.Fatal(err)
	}
	if f.kv, err = js.KeyValue(t.Context(), jetstream.EndpointBucket); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(f.eng, prometheus.NewRegistry(), "", slog.New(slog.DiscardHandler),
		append([]Option{
			WithEndpointStore(f.store, f.eng, func() *config.Config { return &f.cfg }),
			WithConfigPath(configPath),
			WithClock(func() time.Time { return f.now }),
		}, opts...)...)
	f.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		f.srv.Close()
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return f
}

// do sends a request and returns the status, the headers and the decoded
// JSON body (nil when empty).
func (f *fixture) do(t *testing.T, method, path, body string) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	c := http.DefaultClient
	if f.client != nil {
		c = f.client
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(headerVal)) {
		t.Errorf("%s %s shows a header value: %s", method, path, raw)
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatalf("%s %s: body %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, resp.Header, out
}

// revisions returns the bucket's last sequence: any write changes it.
func (f *fixture) revisions(t *testing.T) uint64 {
	t.Helper()
	st, err := f.kv.Status(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return st.(*natsjs.KeyValueBucketStatus).StreamInfo().State.LastSeq
}

const createBody = `{"id":"shop","url":"https://shop.example.com/hooks","events":["order.*"],"tenant":"acme",
	"description":"the shop","headers":{"X-Api-Key":"` + headerVal + `"},"retry":{"max_attempts":4}}`

func TestCreateEndpoint(t *testing.T) {
	f := newFixture(t)
	status, h, out := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody)
	if status != http.StatusCreated {
		t.Fatalf("status %d: %v", status, out)
	}
	secret, _ := out["secret"].(string)
	if _, err := config.DecodeSecret(secret); err != nil || len(secret) != len("whsec_")+44 {
		t.Errorf("secret %q: %v", secret, err)
	}
	for k, want := range map[string]any{"id": "shop", "source": "api", "tenant": "acme", "description": "the shop",
		"url": "https://shop.example.com/hooks", "created_at": "2025-06-01T12:00:00Z", "updated_at": "2025-06-01T12:00:00Z"} {
		if out[k] != want {
			t.Errorf("%s = %v, want %v", k, out[k], want)
		}
	}
	if h.Get("Location") != "/api/v1/endpoints/shop" {
		t.Errorf("Location = %q", h.Get("Location"))
	}
	if br, _ := out["breaker"].(map[string]any); br["state"] != "closed" || br["cooldown_seconds"] != float64(300) {
		t.Errorf("breaker = %v, want closed with the default 300 s cooldown", out["breaker"])
	}
	rec, err := f.store.Get(t.Context(), "shop")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := f.store.Resolve(rec, f.cfg.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Secrets[0].Reveal() != secret || ep.Retry.MaxAttempts != 4 || ep.Retry.Base != f.cfg.Defaults.Retry.Base {
		t.Errorf("stored endpoint %+v", ep)
	}
	if *rec.Overrides.RetryMaxAttempts != 4 || rec.Overrides.RetryBase != nil {
		t.Error("the record holds resolved values, not overrides")
	}

	status, _, out = f.do(t, http.MethodPost, "/api/v1/endpoints", `{"url":"https://x.example.com/","secrets":["`+secretA+`"]}`)
	if status != http.StatusCreated || !strings.HasPrefix(out["id"].(string), "ep_") {
		t.Errorf("generated id: %d %v", status, out)
	}
	if _, shown := out["secret"]; shown {
		t.Error("a given secret is echoed")
	}
}

func TestCreateRefusals(t *testing.T) {
	f := newFixture(t)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody); status != http.StatusCreated {
		t.Fatal(status)
	}
	tests := []struct {
		name, body string
		status     int
		field, msg string
	}{
		{"existing id", createBody, http.StatusConflict, "id", "exists"},
		{"config endpoint", `{"id":"crm","url":"https://x.example.com/"}`, http.StatusConflict, "id", configPath},
		{"unknown field", `{"url":"https://x.example.com/","retyr":{}}`, http.StatusBadRequest, "retyr", "unknown field"},
		{"nested unknown field", `{"url":"https://x.example.com/","retry":{"max":1}}`, http.StatusBadRequest, "retry.max", "unknown field"},
		{"bad url", `{"url":"ftp://x.example.com/"}`, http.StatusBadRequest, "url", "scheme"},
		{"bad setting", `{"url":"https://x.example.com/","retry":{"max_attempts":0}}`, http.StatusBadRequest, "retry.max_attempts", "between"},
		{"bad event", `{"url":"https://x.example.com/","events":["a..b"]}`, http.StatusBadRequest, "events[0]", ""},
		{"bad id", `{"id":"Shop!","url":"https://x.example.com/"}`, http.StatusBadRequest, "id", "may contain only"},
		{"not JSON", `{"url"`, http.StatusBadRequest, "body", "invalid JSON"},
		{"too large", `{"url":"https://x.example.com/","description":"` + strings.Repeat("x", 64<<10) + `"}`, http.StatusRequestEntityTooLarge, "body", "larger than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.revisions(t)
			status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints", tt.body)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %v", status, tt.status, out)
			}
			if out["field"] != nil && out["field"] != tt.field || tt.field != "" && out["field"] != tt.field {
				t.Errorf("field = %v, want %q", out["field"], tt.field)
			}
			if msg, _ := out["error"].(string); !strings.Contains(msg, tt.msg) {
				t.Errorf("error %q does not contain %q", msg, tt.msg)
			}
			if f.revisions(t) != before {
				t.Error("a refused request wrote to the bucket")
			}
		})
	}
	t.Run("https_only", func(t *testing.T) {
		f.cfg.Security.HTTPSOnly = true
		defer func() { f.cfg.Security.HTTPSOnly = false }()
		status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints", `{"url":"http://x.example.com/"}`)
		if status != http.StatusBadRequest || out["field"] != "url" {
			t.Errorf("status %d %v", status, out)
		}
	})
	t.Run("max_endpoints", func(t *testing.T) {
		f.cfg.Security.MaxEndpoints = 1
		defer func() { f.cfg.Security.MaxEndpoints = config.Default().Security.MaxEndpoints }()
		status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints", `{"url":"https://x.example.com/"}`)
		if status != http.StatusConflict || !strings.Contains(out["error"].(string), "security.max_endpoints") {
			t.Errorf("status %d %v", status, out)
		}
	})
}

func TestPatchEndpoint(t *testing.T) {
	f := newFixture(t)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody); status != http.StatusCreated {
		t.Fatal(status)
	}
	f.now = f.now.Add(time.Hour)
	status, _, out := f.do(t, http.MethodPatch, "/api/v1/endpoints/shop", `{"events":["invoice.*"],"retry":{"base":"1s"},"tenant":null}`)
	if status != http.StatusOK {
		t.Fatalf("status %d %v", status, out)
	}
	if out["tenant"] != "" || out["created_at"] != "2025-06-01T12:00:00Z" || out["updated_at"] != "2025-06-01T13:00:00Z" || out["secret"] != nil {
		t.Errorf("answer %v", out)
	}
	rec, _ := f.store.Get(t.Context(), "shop")
	ep, err := f.store.Resolve(rec, f.cfg.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Retry.Base != time.Second || ep.Retry.MaxAttempts != 4 || ep.Events[0] != "invoice.*" || ep.Headers["X-Api-Key"].Reveal() != headerVal {
		t.Errorf("merged endpoint %+v", ep)
	}
	tests := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"unknown endpoint", "/api/v1/endpoints/nope", `{"tenant":"x"}`, http.StatusNotFound, ""},
		{"config endpoint", "/api/v1/endpoints/crm", `{"tenant":"x"}`, http.StatusConflict, ""},
		{"bad url", "/api/v1/endpoints/shop", `{"url":"nope"}`, http.StatusBadRequest, "url"},
		{"cap below base", "/api/v1/endpoints/shop", `{"retry":{"base":"2h"}}`, http.StatusBadRequest, "retry.cap"},
		{"id change", "/api/v1/endpoints/shop", `{"id":"other"}`, http.StatusBadRequest, "id"},
		{"unknown field", "/api/v1/endpoints/shop", `{"nope":1}`, http.StatusBadRequest, "nope"},
		{"no secrets left", "/api/v1/endpoints/shop", `{"secrets":[]}`, http.StatusBadRequest, "secrets"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.revisions(t)
			status, _, out := f.do(t, http.MethodPatch, tt.path, tt.body)
			if status != tt.status || tt.field != "" && out["field"] != tt.field {
				t.Errorf("status %d field %v, want %d %q: %v", status, out["field"], tt.status, tt.field, out)
			}
			if f.revisions(t) != before {
				t.Error("a refused request wrote to the bucket")
			}
		})
	}
	if msg := patchMsg(t, f); !strings.Contains(msg, configPath) {
		t.Errorf("409 for a config endpoint does not name the file: %q", msg)
	}
}

func patchMsg(t *testing.T, f *fixture) string {
	_, _, out := f.do(t, http.MethodPatch, "/api/v1/endpoints/crm", `{}`)
	msg, _ := out["error"].(string)
	return msg
}

func TestDeleteEndpoint(t *testing.T) {
	f := newFixture(t)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody); status != http.StatusCreated {
		t.Fatal(status)
	}
	if status, _, out := f.do(t, http.MethodDelete, "/api/v1/endpoints/crm", ""); status != http.StatusConflict || !strings.Contains(out["error"].(string), configPath) {
		t.Errorf("config endpoint: %d %v", status, out)
	}
	status, h, _ := f.do(t, http.MethodDelete, "/api/v1/endpoints/shop", "")
	if status != http.StatusNoContent || h.Get(DiscardedHeader) != "3" {
		t.Errorf("delete: %d %s=%q", status, DiscardedHeader, h.Get(DiscardedHeader))
	}
	if _, err := f.store.Get(t.Context(), "shop"); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Errorf("still stored: %v", err)
	}
	if status, _, _ := f.do(t, http.MethodDelete, "/api/v1/endpoints/shop", ""); status != http.StatusNotFound {
		t.Errorf("second delete: %d", status)
	}
	if calls := strings.Join(f.eng.Calls(), ";"); calls != "discard shop" {
		t.Errorf("engine calls %q", calls)
	}
}

func TestRotateSecret(t *testing.T) {
	f := newFixture(t)
	_, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody)
	first := out["secret"].(string)
	status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints/shop/secret/rotate", `{"grace":"2h"}`)
	if status != http.StatusOK {
		t.Fatalf("status %d %v", status, out)
	}
	second := out["secret"].(string)
	if second == first || !strings.HasPrefix(second, "whsec_") || len(out) != 1 {
		t.Fatalf("rotate answered %v", out)
	}
	resolve := func() config.Endpoint {
		rec, _ := f.store.Get(t.Context(), "shop")
		ep, err := f.store.Resolve(rec, f.cfg.Defaults)
		if err != nil {
			t.Fatal(err)
		}
		return ep
	}
	ep := resolve()
	if len(ep.Secrets) != 2 || ep.Secrets[0].Reveal() != second || ep.Secrets[1].Reveal() != first ||
		!ep.SecretExpiry[1].Equal(f.now.Add(2*time.Hour)) || !ep.SecretExpiry[0].IsZero() {
		t.Fatalf("after rotation: %d secrets, expiry %v", len(ep.Secrets), ep.SecretExpiry)
	}
	// A second rotation without a body: the default grace, and the first
	// secret keeps its earlier end.
	f.now = f.now.Add(time.Hour)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints/shop/secret/rotate", ""); status != http.StatusOK {
		t.Fatal(status)
	}
	ep = resolve()
	if len(ep.Secrets) != 3 || !ep.SecretExpiry[1].Equal(f.now.Add(24*time.Hour)) || !ep.SecretExpiry[2].Equal(f.now.Add(time.Hour)) {
		t.Errorf("after the second rotation: expiry %v", ep.SecretExpiry)
	}
	f.now = f.now.Add(time.Hour)
	if ep = resolve(); len(ep.Secrets) != 2 {
		t.Errorf("the first secret still signs after its grace: %d secrets", len(ep.Secrets))
	}
	tests := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"grace too long", "/api/v1/endpoints/shop/secret/rotate", `{"grace":"169h"}`, http.StatusBadRequest, "grace"},
		{"grace not a duration", "/api/v1/endpoints/shop/secret/rotate", `{"grace":"soon"}`, http.StatusBadRequest, "grace"},
		{"grace a number", "/api/v1/endpoints/shop/secret/rotate", `{"grace":5}`, http.StatusBadRequest, "grace"},
		{"unknown field", "/api/v1/endpoints/shop/secret/rotate", `{"gracee":"1h"}`, http.StatusBadRequest, "gracee"},
		{"unknown endpoint", "/api/v1/endpoints/nope/secret/rotate", `{}`, http.StatusNotFound, ""},
		{"config endpoint", "/api/v1/endpoints/crm/secret/rotate", `{}`, http.StatusConflict, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.revisions(t)
			status, _, out := f.do(t, http.MethodPost, tt.path, tt.body)
			if status != tt.status || tt.field != "" && out["field"] != tt.field {
				t.Errorf("status %d field %v, want %d %q: %v", status, out["field"], tt.status, tt.field, out)
			}
			if out["secret"] != nil {
				t.Error("a refused rotation shows a secret")
			}
			if f.revisions(t) != before {
				t.Error("a refused request wrote to the bucket")
			}
		})
	}
}

func TestTestAndRedeliver(t *testing.T) {
	f := newFixture(t)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints", createBody); status != http.StatusCreated {
		t.Fatal(status)
	}
	status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints/shop/test", "")
	if status != http.StatusAccepted || out["event_id"] != "evt_1" {
		t.Errorf("test: %d %v", status, out)
	}
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints/crm/test", ""); status != http.StatusAccepted {
		t.Errorf("test of a config endpoint: %d", status)
	}
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints/shop/test", `{"type":"order.created","data":{"amount":1200}}`); status != http.StatusAccepted {
		t.Errorf("test with a type and an example: %d", status)
	}
	status, _, out = f.do(t, http.MethodPost, "/api/v1/endpoints/shop/redeliver", `{"since":"2h","until":"2025-06-01T11:30:00Z","dry_run":true}`)
	if status != http.StatusOK || out["matched"] != 7.0 || out["queued"] != 5.0 {
		t.Errorf("redeliver: %d %v", status, out)
	}
	want := "test shop;test crm;test shop order.created {\"amount\":1200};redeliver shop 2025-06-01T10:00:00Z 2025-06-01T11:30:00Z true"
	if calls := strings.Join(f.eng.Calls(), ";"); calls != want {
		t.Errorf("engine calls\n%s\nwant\n%s", calls, want)
	}
	tests := []struct {
		name, path, body string
		status           int
		field            string
	}{
		{"test unknown", "/api/v1/endpoints/nope/test", "", http.StatusNotFound, ""},
		{"test with a body field", "/api/v1/endpoints/shop/test", `{"x":1}`, http.StatusBadRequest, "x"},
		{"test with data and no type", "/api/v1/endpoints/shop/test", `{"data":{}}`, http.StatusBadRequest, "type"},
		{"test with a bad type", "/api/v1/endpoints/shop/test", `{"type":"order..created"}`, http.StatusBadRequest, "type"},
		{"redeliver unknown", "/api/v1/endpoints/nope/redeliver", `{"since":"1h"}`, http.StatusNotFound, ""},
		{"since missing", "/api/v1/endpoints/shop/redeliver", `{}`, http.StatusBadRequest, "since"},
		{"since bad", "/api/v1/endpoints/shop/redeliver", `{"since":"yesterday"}`, http.StatusBadRequest, "since"},
		{"until before since", "/api/v1/endpoints/shop/redeliver", `{"since":"1h","until":"2h"}`, http.StatusBadRequest, "until"},
		{"unknown field", "/api/v1/endpoints/shop/redeliver", `{"since":"1h","dryrun":true}`, http.StatusBadRequest, "dryrun"},
		{"dry_run a string", "/api/v1/endpoints/shop/redeliver", `{"since":"1h","dry_run":"yes"}`, http.StatusBadRequest, "dry_run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, _, out := f.do(t, http.MethodPost, tt.path, tt.body)
			if status != tt.status || tt.field != "" && out["field"] != tt.field {
				t.Errorf("status %d field %v, want %d %q: %v", status, out["field"], tt.status, tt.field, out)
			}
		})
	}
	if n := len(f.eng.Calls()); n != 4 {
		t.Errorf("refused requests reached the engine: %v", f.eng.Calls())
	}
	f.eng.fail = fmt.Errorf("test: %w", errors.ErrUnsupported)
	if status, _, _ := f.do(t, http.MethodPost, "/api/v1/endpoints/shop/test", ""); status != http.StatusNotImplemented {
		t.Errorf("unsupported: %d", status)
	}
}

func TestListEndpoints(t *testing.T) {
	f := newFixture(t)
	status, _, out := f.do(t, http.MethodGet, "/api/v1/endpoints", "")
	if status != http.StatusOK || out["next"] != "a" || len(out["endpoints"].([]any)) != 1 {
		t.Errorf("list: %d %v", status, out)
	}
	if status, _, _ := f.do(t, http.MethodGet, "/api/v1/endpoints?tenant=acme&after=b&limit=1000", ""); status != http.StatusOK {
		t.Error(status)
	}
	for _, bad := range []string{"0", "1001", "x"} {
		if status, _, out := f.do(t, http.MethodGet, "/api/v1/endpoints?limit="+bad, ""); status != http.StatusBadRequest || out["field"] != "limit" {
			t.Errorf("limit=%s: %d %v", bad, status, out)
		}
	}
	if got := strings.Join(f.eng.pages, ";"); got != "||100;acme|b|1000" {
		t.Errorf("pages asked %q", got)
	}
}

func TestManagementNeedsAStore(t *testing.T) {
	srv := httptest.NewServer(NewHandler(&engine{}, prometheus.NewRegistry(), "", slog.New(slog.DiscardHandler)))
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/api/v1/endpoints", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusNotImplemented {
		t.Errorf("status %d", resp.StatusCode)
	}
}

// A route that exists with another method answers 405 with Allow; a path
// with no route at all answers 404. Both in JSON.
func TestWrongMethodIs405(t *testing.T) {
	f := newFixture(t)
	code, hdr, out := f.do(t, http.MethodPut, "/api/v1/summary", "")
	if code != http.StatusMethodNotAllowed || hdr.Get("Allow") != "GET" || out["error"] == nil {
		t.Fatalf("PUT /api/v1/summary: %d, Allow %q, %v; want 405, Allow GET and an error", code, hdr.Get("Allow"), out)
	}
	code, hdr, _ = f.do(t, http.MethodPut, "/api/v1/endpoints/shop", "")
	if code != http.StatusMethodNotAllowed || !strings.Contains(hdr.Get("Allow"), "PATCH") {
		t.Fatalf("PUT /api/v1/endpoints/shop: %d, Allow %q; want 405 listing PATCH", code, hdr.Get("Allow"))
	}
	if code, _, out := f.do(t, http.MethodGet, "/api/v1/nothing", ""); code != http.StatusNotFound || out["error"] == nil {
		t.Fatalf("GET /api/v1/nothing: %d %v; want 404 with an error", code, out)
	}
}

// A replay without a body is refused with a message saying what to send,
// not replayed as "everything".
func TestReplayWithoutBodyIs400(t *testing.T) {
	f := newFixture(t)
	code, _, out := f.do(t, http.MethodPost, "/api/v1/dlq/replay", "")
	if msg, _ := out["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "{} replays every dead letter") {
		t.Fatalf("POST /api/v1/dlq/replay with no body: %d %v", code, out)
	}
}

// An endpoint's auth and proxy go in through the API, come back as the
// auth's type and the proxy without its password, and env:/file: forms
// are refused naming the field.
func TestCreateEndpointWithAuth(t *testing.T) {
	f := newFixture(t)
	const clientSecret = "client-secret-never-shown"
	body := `{"id":"erp","url":"https://erp.example.com/hooks","proxy":"http://u:proxy-pw-never-shown@proxy.internal:3128",
		"auth":{"type":"oauth2","token_url":"https://id.example.com/token","client_id":"hookjet","client_secret":"` + clientSecret + `","scopes":["hooks"]}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, f.srv.URL+"/api/v1/endpoints", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status %d: %s", resp.StatusCode, raw)
	}
	for _, secret := range []string{clientSecret, "proxy-pw-never-shown"} {
		if bytes.Contains(raw, []byte(secret)) {
			t.Errorf("the answer shows %q: %s", secret, raw)
		}
	}
	var out struct {
		Settings api.EndpointSettings `json:"settings"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	if out.Settings.Auth != "oauth2" || out.Settings.Proxy != "http://u:xxxxx@proxy.internal:3128" {
		t.Errorf("settings auth %q, proxy %q", out.Settings.Auth, out.Settings.Proxy)
	}
	rec, err := f.store.Get(t.Context(), "erp")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := f.store.Resolve(rec, f.cfg.Defaults)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Auth.ClientSecret.Reveal() != clientSecret || ep.Auth.Scopes[0] != "hooks" {
		t.Errorf("stored auth %v", ep.Auth)
	}

	for _, tt := range []struct{ body, field string }{
		{`{"url":"https://x.example.com/","auth":{"type":"bearer","token":"env:TOKEN"}}`, "auth.token"},
		{`{"url":"https://x.example.com/","auth":{"type":"mtls","cert":"/etc/client.pem","key":"file:/etc/client.key"}}`, "auth.cert"},
		{`{"url":"https://x.example.com/","auth":{"type":"bearer"}}`, "auth.token"},
		{`{"url":"https://x.example.com/","proxy":"socks5://p:1"}`, "proxy"},
	} {
		status, _, out := f.do(t, http.MethodPost, "/api/v1/endpoints", tt.body)
		if status != http.StatusBadRequest || out["field"] != tt.field {
			t.Errorf("%s: %d %v, want 400 naming %s", tt.body, status, out, tt.field)
		}
	}
}

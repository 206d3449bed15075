package hookjettest

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/publish"
	"github.com/hookjet/hookjet/server"
)

// TB is the part of testing.TB that hookjettest uses; *testing.T and
// *testing.B satisfy it. Call a Hookjet's methods from the test's goroutine:
// they end the test with Fatalf when something fails.
type TB interface {
	Helper()
	Cleanup(func())
	TempDir() string
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// Hookjet is a running, embedded hookjet. Its methods are safe for
// concurrent use, but since they fail the test with Fatalf they belong on
// the test's goroutine.
type Hookjet struct {
	t   TB
	o   options
	srv *server.Server
	nc  *nats.Conn
	api *http.Client

	mu   sync.Mutex // guards ids and n
	ids  map[string]bool
	n    int
	stop sync.Once
}

// Start starts an embedded NATS server and hookjet in t.TempDir(), on free
// loopback ports, with delivery to loopback addresses allowed, and returns
// once hookjet delivers. t.Cleanup stops both and everything they started.
func Start(t TB, opts ...Option) *Hookjet {
	t.Helper()
	o := options{wait: 10 * time.Second}
	for _, opt := range opts {
		opt(&o)
	}
	cfg := testConfig(t.TempDir())
	for _, fn := range o.configure {
		fn(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("hookjettest: configuration: %v", err)
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	srv, err := server.Start(context.Background(), &cfg, server.Options{Log: o.log, TracerProvider: o.tp})
	if err != nil {
		t.Fatalf("hookjettest: start hookjet: %v", err)
	}
	h := &Hookjet{t: t, o: o, srv: srv, ids: map[string]bool{}, api: &http.Client{Transport: apiTransport(), Timeout: o.wait}}
	t.Cleanup(h.close)
	// The test's own connection is in-process: no TCP, no port.
	if h.nc, err = nats.Connect("", nats.InProcessServer(srv), nats.Name("hookjettest")); err != nil {
		t.Fatalf("hookjettest: connect to nats: %v", err)
	}
	return h
}

// apiTransport makes the transport of a Hookjet's calls to the admin API:
// one of its own, so that close can drop its connections. hookjettest's own
// tests wrap it to validate the calls against the OpenAPI document
// (export_test.go).
var apiTransport = func() http.RoundTripper { return &http.Transport{} }

// testConfig is the configuration Start begins from.
func testConfig(dir string) config.Config {
	c := config.Default()
	c.DataDir = dir
	c.NATS.Listen = "127.0.0.1:0"
	c.Admin.Listen = "127.0.0.1:0"
	c.Security.AllowPrivateNetworks = true
	c.Portal.AllowPrivateNetworks = true // tenants' test receivers are on loopback too
	// JetStream reserves every stream's max_bytes against the store's disk
	// (75% of what is free): production sizes would not fit a CI runner or
	// a tmpfs TMPDIR.
	c.Streams.MaxBytes = 256 << 20
	c.Streams.TasksMaxBytes = 256 << 20
	c.Streams.DLQMaxBytes = 64 << 20
	// A test's temporary directory need not survive a power cut: the
	// embedded server syncs lazily (JetStream's own default) instead of
	// fsyncing every event before its PubAck as hookjet does by default.
	c.NATS.Sync = "2m"
	c.Log.MaxBytes = 64 << 20 // the delivery log, HOOKJET_LOG
	c.Worker.ShutdownGrace = 5 * time.Second
	c.Defaults.Timeout = 5 * time.Second
	c.Defaults.Retry = config.Retry{Base: 100 * time.Millisecond, Cap: time.Second, MaxAttempts: 5, MaxAge: time.Hour}
	return c
}

// close stops the test's connection and hookjet, embedded NATS included.
func (h *Hookjet) close() {
	h.stop.Do(func() {
		if h.nc != nil {
			h.nc.Close()
		}
		if err := h.srv.Shutdown(); err != nil {
			h.t.Logf("hookjettest: shutdown: %v", err)
		}
		h.api.CloseIdleConnections()
	})
}

// NATSURL is the embedded NATS server's client URL (nats://127.0.0.1:port),
// for the application's own NATS client.
func (h *Hookjet) NATSURL() string { return h.srv.NATSURL() }

// AdminURL is the base URL of the admin API (http://127.0.0.1:port), without
// a token.
func (h *Hookjet) AdminURL() string { return "http://" + h.srv.AdminAddr() }

// AddEndpoint adds an endpoint that receives the events matching the
// NATS-style patterns events (all events when there are none) at url,
// through the admin API as an operator would, and returns its id ("ep1",
// "ep2", ...) and its new signing secret ("whsec_..."). It returns once the
// endpoint is applied: events published from then on reach it.
func (h *Hookjet) AddEndpoint(url string, events ...string) (id, secret string) {
	h.t.Helper()
	secret = NewSecret()
	return h.AddEndpointWithSecret(url, secret, events...), secret
}

// AddEndpointWithSecret is [Hookjet.AddEndpoint] with the signing secret
// given (for example from [NewSecret]), so that a verifying receiver can be
// built with it before the endpoint exists: no receiver sees a request it
// cannot verify. It returns the endpoint's id once it is applied.
func (h *Hookjet) AddEndpointWithSecret(url, secret string, events ...string) (id string) {
	h.t.Helper()
	h.mu.Lock()
	h.n++
	id = fmt.Sprintf("ep%d", h.n)
	h.mu.Unlock()
	if len(events) == 0 {
		events = []string{">"}
	}
	if err := h.addEndpoint(id, url, secret, events); err != nil {
		h.t.Fatalf("hookjettest: add endpoint %s: %v", url, err)
	}
	return id
}

// addEndpoint makes hookjet deliver to a new endpoint through the admin
// API, as an operator would (POST /api/v1/endpoints, "source": "api"), and
// returns once this process applies it (GET /api/v1/endpoints/{id} answers),
// so that events published afterwards reach it.
func (h *Hookjet) addEndpoint(id, url, secret string, events []string) error {
	body, err := json.Marshal(map[string]any{"id": id, "url": url, "events": events, "secrets": []string{secret}})
	if err != nil {
		return err
	}
	if err := h.call(http.MethodPost, "/api/v1/endpoints", body, http.StatusCreated, nil); err != nil {
		return err
	}
	deadline := time.Now().Add(h.o.wait)
	for {
		err := h.get("/api/v1/endpoints/"+neturl.PathEscape(id), &json.RawMessage{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("endpoint %s created but not applied within %s: %w", id, h.o.wait, err)
		}
		time.Sleep(poll)
	}
	h.mu.Lock()
	h.ids[id] = true
	h.mu.Unlock()
	return nil
}

// NewSecret returns a new random signing secret, "whsec_" and 32 random
// bytes in base64.
func NewSecret() string {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // never fails: crypto/rand crashes the program instead
	return "whsec_" + base64.StdEncoding.EncodeToString(key)
}

// Publish publishes an event of type eventType with event id id (header
// Nats-Msg-Id, the webhook-id; "" lets hookjet choose one) and waits until
// hookjet has stored it: a NATS request to hookjet.publish.<eventType>,
// as an application's publisher would send it.
func (h *Hookjet) Publish(eventType, id string, payload []byte) {
	h.t.Helper()
	m := nats.NewMsg(jetstream.EventsPrefix + eventType)
	m.Data = payload
	if id != "" {
		m.Header.Set(jetstream.HdrMsgID, id)
	}
	h.PublishMsg(m)
}

// PublishFor publishes one event of tenant (header Hookjet-Tenant) like
// [Hookjet.Publish]: it reaches that tenant's endpoints and those without a
// tenant (Publish's events reach only the latter).
func (h *Hookjet) PublishFor(tenant, eventType, id string, payload []byte) {
	h.t.Helper()
	m := nats.NewMsg(jetstream.EventsPrefix + eventType)
	m.Data = payload
	if id != "" {
		m.Header.Set(jetstream.HdrMsgID, id)
	}
	m.Header.Set(jetstream.HdrTenant, tenant)
	h.PublishMsg(m)
}

// PublishKeyed publishes one event with ordering key (header
// Hookjet-Ordering-Key, at most 255 bytes) like [Hookjet.Publish]: every
// POST of it carries the key, and an endpoint with ordering: key
// ([WithSettings]) delivers the events of one key in publish order.
func (h *Hookjet) PublishKeyed(key, eventType, id string, payload []byte) {
	h.t.Helper()
	m := nats.NewMsg(jetstream.EventsPrefix + eventType)
	m.Data = payload
	if id != "" {
		m.Header.Set(jetstream.HdrMsgID, id)
	}
	m.Header.Set(jetstream.HdrOrderingKey, key)
	h.PublishMsg(m)
}

// PublishMsg publishes m, whose subject is "hookjet.events.<type>", with
// its headers (Nats-Msg-Id, Hookjet-Tenant, Hookjet-Ordering-Key, and
// others such as traceparent or Content-Type) and waits until hookjet has
// stored it. It goes as a request to hookjet.publish.<type>.
func (h *Hookjet) PublishMsg(m *nats.Msg) {
	h.t.Helper()
	typ, ok := strings.CutPrefix(m.Subject, jetstream.EventsPrefix)
	if !ok {
		h.t.Fatalf("hookjettest: publish to %q: events go to %s<type>", m.Subject, jetstream.EventsPrefix)
	}
	e := publish.Event{Type: typ, Data: m.Data, Header: map[string][]string{}}
	for k, v := range m.Header {
		switch k {
		case jetstream.HdrMsgID:
			e.ID = v[0]
		case jetstream.HdrTenant:
			e.Tenant = v[0]
		case publish.HeaderKey:
			e.Key = v[0]
		default:
			e.Header[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.o.wait)
	defer cancel()
	if _, err := jetstream.PublishRequest(ctx, h.nc, e); err != nil {
		h.t.Fatalf("hookjettest: publish %s: %v", m.Subject, err)
	}
}

// logWriter sends log lines to t.Logf.
type logWriter struct{ t TB }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

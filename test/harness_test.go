package test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/freeport"
	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/server"
)

// Two secrets, so every test checks rotation: each request must carry a valid
// signature for both.
const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
)

// checkFor polls fn until it returns nil or timeout passes.
func checkFor(t testing.TB, timeout, interval time.Duration, fn func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for time.Now().Before(deadline) {
		if err = fn(); err == nil {
			return
		}
		time.Sleep(interval)
	}
	t.Fatalf("condition not met after %s: %v", timeout, err)
}

// delivery is one request a receiver got.
type delivery struct {
	ID      string
	Body    []byte
	Header  http.Header
	At      time.Time
	SigErr  error
	Attempt int // 1-based count of requests with this id at this receiver
}

// receiver is an httptest server that verifies every request's signatures
// against the given secrets and answers with script(n, d) where n counts
// requests with the same webhook-id.
type receiver struct {
	*httptest.Server
	t       testing.TB
	secrets []string
	mu      sync.Mutex
	got     []delivery
	perID   map[string]int
	markers map[string]int // requests per marker id, kept out of got and perID
	script  func(w http.ResponseWriter, d delivery)
}

func newReceiver(t testing.TB, secrets []string, script func(w http.ResponseWriter, d delivery)) *receiver {
	r := &receiver{t: t, secrets: secrets, perID: map[string]int{}, markers: map[string]int{}, script: script}
	if r.script == nil {
		r.script = func(w http.ResponseWriter, _ delivery) { w.WriteHeader(http.StatusNoContent) }
	}
	r.Server = httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) verify(h http.Header, body []byte) error {
	id, ts, sig := h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature")
	if id == "" || ts == "" || sig == "" {
		return fmt.Errorf("missing webhook headers: id=%q ts=%q sig=%q", id, ts, sig)
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || time.Since(time.Unix(sec, 0)).Abs() > 5*time.Minute {
		return fmt.Errorf("bad timestamp %q", ts)
	}
	have := strings.Fields(sig)
	if len(have) != len(r.secrets) {
		return fmt.Errorf("want %d signatures, got %d", len(r.secrets), len(have))
	}
	for i, s := range r.secrets {
		key, err := testkit.DecodeKey(s)
		if err != nil {
			return fmt.Errorf("secret %d: %w", i, err)
		}
		if want := testkit.RefSign(key, id, ts, body); have[i] != want {
			return fmt.Errorf("signature %d: got %q want %q", i, have[i], want)
		}
	}
	return nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		r.t.Errorf("read body: %v", err)
		return
	}
	d := delivery{ID: req.Header.Get("webhook-id"), Body: body, Header: req.Header.Clone(), At: time.Now()}
	d.SigErr = r.verify(req.Header, body)
	if d.SigErr != nil {
		r.t.Errorf("receiver: %v", d.SigErr)
	}
	r.mu.Lock()
	if strings.HasPrefix(d.ID, markerPrefix) {
		r.markers[d.ID]++
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
		return
	}
	r.perID[d.ID]++
	d.Attempt = r.perID[d.ID]
	r.got = append(r.got, d)
	r.mu.Unlock()
	r.script(w, d)
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.got)
}

// distinct counts distinct webhook-ids received.
func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.perID)
}

func (r *receiver) requestsFor(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.perID[id]
}

// markerPrefix starts the ids of marker events (see hookjet.settle). A
// receiver answers them 2xx whatever its script says and leaves them out of
// deliveries, count, distinct and requestsFor.
const markerPrefix = "marker_"

// markerCount counts marker events across the test binary, for unique ids.
var markerCount atomic.Int64

// settle publishes a marker event of type typ and waits until every
// receiver in rs has received it. A check that nothing more arrives (no
// retry after an ack, no second copy of a duplicate) ends with settle rather
// than a sleep: what was published before the marker and still on its way
// has then had the marker's whole trip to turn up, and the check fails if it
// did. typ must reach every receiver in rs.
func (h *hookjet) settle(typ string, rs ...*receiver) {
	h.t.Helper()
	id := fmt.Sprintf("%s%d", markerPrefix, markerCount.Add(1))
	h.publish(typ, id, []byte(`{"marker":true}`))
	checkFor(h.t, 15*time.Second, 10*time.Millisecond, func() error {
		for i, r := range rs {
			r.mu.Lock()
			n := r.markers[id]
			r.mu.Unlock()
			if n == 0 {
				return fmt.Errorf("receiver %d has not got marker %s", i, id)
			}
		}
		return nil
	})
}

// endpointYAML is an endpoint entry for testConfig.
type endpointYAML struct {
	ID, URL string
	Events  []string
	Extra   string // extra YAML lines for the endpoint, indented by the caller
}

// testConfig builds and validates a config for an in-process hookjet with
// fast retries, loopback delivery allowed, everything under dir.
func testConfig(t testing.TB, dir string, extra string, eps ...endpointYAML) *config.Config {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "data_dir: %s\nnats:\n  listen: 127.0.0.1:%d\nadmin:\n  listen: 127.0.0.1:0\n", dir, freePort(t))
	// A shared secret_key, as every process on one NATS needs (nats.url).
	if !strings.Contains(extra, "portal:") {
		// The receivers of tenants' endpoints are on loopback too.
		b.WriteString("portal:\n  allow_private_networks: true\n")
	}
	b.WriteString("log:\n  level: debug\nsecurity:\n  allow_private_networks: true\n  secret_key: MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\nworker:\n  shutdown_grace: 5s\n")
	b.WriteString("defaults:\n  timeout: 2s\n  retry: {base: 50ms, cap: 200ms, max_attempts: 5, max_age: 1h}\n")
	b.WriteString(extra)
	b.WriteString("endpoints:\n")
	for _, ep := range eps {
		events := ep.Events
		if len(events) == 0 {
			events = []string{">"}
		}
		q := make([]string, len(events))
		for i, e := range events {
			q[i] = strconv.Quote(e)
		}
		fmt.Fprintf(&b, "  - id: %s\n    url: %s\n    secrets: [%s, %s]\n    events: [%s]\n%s", ep.ID, ep.URL, secretA, secretB, strings.Join(q, ", "), ep.Extra)
	}
	cfg, err := config.Parse([]byte(b.String()), func(string) string { return "" })
	if err != nil {
		t.Fatalf("config: %v\n%s", err, b.String())
	}
	// JetStream reserves every stream's max_bytes against the disk: keep
	// the tests' reservations small.
	cfg.Streams.MaxBytes, cfg.Streams.DLQMaxBytes, cfg.Streams.TasksMaxBytes = 256<<20, 64<<20, 256<<20
	cfg.Log.MaxBytes = 64 << 20
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func freePort(t testing.TB) int {
	t.Helper()
	p, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// hookjet is an in-process hookjet with a client connection to its NATS.
type hookjet struct {
	t   testing.TB
	cfg *config.Config
	srv *server.Server
	nc  *nats.Conn
	js  natsjs.JetStream
}

type tLogWriter struct{ t testing.TB }

func (w tLogWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func startHookjet(t testing.TB, cfg *config.Config, o server.Options) *hookjet {
	t.Helper()
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(tLogWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	srv, err := server.Start(context.Background(), cfg, o)
	if err != nil {
		t.Fatalf("start hookjet: %v", err)
	}
	h := &hookjet{t: t, cfg: cfg, srv: srv}
	url := cfg.NATS.URL
	if url == "" {
		url = "nats://" + cfg.NATS.Listen
	}
	h.nc, err = nats.Connect(url)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	h.js, err = natsjs.New(h.nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.stop)
	return h
}

func (h *hookjet) stop() {
	if h.nc != nil {
		h.nc.Close()
		h.nc = nil
	}
	if h.srv != nil {
		if err := h.srv.Shutdown(); err != nil {
			h.t.Errorf("shutdown: %v", err)
		}
		h.srv = nil
	}
}

// publish publishes one event with Nats-Msg-Id id (none when empty) the way the application that owns it would:
// as the tenant its JSON payload names in a top-level "tenant" field
// (header Hookjet-Tenant), untagged when it names none. Tests that need an
// untagged event with such a payload call publishFor("", ...).
func (h *hookjet) publish(typ, id string, body []byte) *natsjs.PubAck {
	h.t.Helper()
	var owner struct {
		Tenant string `json:"tenant"`
	}
	_ = json.Unmarshal(body, &owner) // not JSON or no tenant: untagged
	return h.publishFor(owner.Tenant, typ, id, body)
}

// publishFor publishes one event of tenant (header Hookjet-Tenant; none
// when empty) with Nats-Msg-Id id (none when empty).
func (h *hookjet) publishFor(tenant, typ, id string, body []byte) *natsjs.PubAck {
	h.t.Helper()
	m := nats.NewMsg("hookjet.events." + typ)
	m.Data = body
	if id != "" {
		m.Header.Set("Nats-Msg-Id", id)
	}
	if tenant != "" {
		m.Header.Set("Hookjet-Tenant", tenant)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ack, err := h.js.PublishMsg(ctx, m)
	if err != nil {
		h.t.Fatalf("publish: %v", err)
	}
	return ack
}

// createAPIEndpoint creates endpoint id through the admin API, delivering
// the events patterns match to url, signed with both test secrets, and waits
// until the engine serves it.
func (h *hookjet) createAPIEndpoint(id, url string, patterns ...string) {
	h.t.Helper()
	token := h.cfg.Admin.Token.Reveal()
	body := map[string]any{"id": id, "url": url, "events": patterns, "secrets": []string{secretA, secretB}}
	if code := h.api("POST", "/api/v1/endpoints", token, body, nil); code != http.StatusCreated {
		h.t.Fatalf("create %s: HTTP %d", id, code)
	}
	checkFor(h.t, 5*time.Second, 20*time.Millisecond, func() error {
		if code := h.api("GET", "/api/v1/endpoints/"+id, token, nil, nil); code != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", id, code)
		}
		return nil
	})
}

// api calls the admin API and decodes the JSON answer into out. The call
// and its answer are validated against the OpenAPI document (TestMain
// installs internal/apicheck as http.DefaultTransport).
func (h *hookjet) api(method, path, token string, in, out any) int {
	h.t.Helper()
	return adminCall(h.t, h.srv.AdminAddr(), method, path, token, in, out)
}

// adminCall makes one admin API call to the hookjet listening at addr (in
// process or the built binary): in as JSON when not nil, the answer decoded
// into out when not nil; it returns the status.
func adminCall(t testing.TB, addr, method, path, token string, in, out any) int {
	t.Helper()
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, "http://"+addr+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: decode %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode
}

// dlq returns the dead letters as the admin API lists them.
type dlqEntry struct {
	Seq        uint64 `json:"seq"`
	EventID    string `json:"event_id"`
	EventType  string `json:"event_type"`
	Endpoint   string `json:"endpoint"`
	Reason     string `json:"reason"`
	Attempts   int    `json:"attempts"`
	LastStatus int    `json:"last_status"`
	LastError  string `json:"last_error"`
	First      string `json:"first_attempt"`
	Last       string `json:"last_attempt"`
}

func (h *hookjet) dlq(query string) []dlqEntry {
	h.t.Helper()
	var out struct {
		Entries []dlqEntry `json:"entries"`
	}
	if code := h.api("GET", "/api/v1/dlq"+query, h.cfg.Admin.Token.Reveal(), nil, &out); code != 200 {
		h.t.Fatalf("dlq: HTTP %d", code)
	}
	return out.Entries
}

// metric returns the value of an unlabelled series from /metrics, or -1 when
// it is missing.
func (h *hookjet) metric(name string) float64 {
	h.t.Helper()
	resp, err := http.Get("http://" + h.srv.AdminAddr() + "/metrics")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err == nil {
				return f
			}
		}
	}
	return -1
}

// waitFor waits until id has arrived at r.
func (r *receiver) waitFor(t testing.TB, id string) {
	t.Helper()
	checkFor(t, 15*time.Second, 20*time.Millisecond, func() error {
		if r.requestsFor(id) == 0 {
			return fmt.Errorf("%s has not arrived", id)
		}
		return nil
	})
}

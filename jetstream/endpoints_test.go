package jetstream

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/seal"
)

const (
	testSecret  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	testSecret2 = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
	testHeader  = "header-value-that-is-a-credential"
	testClient  = "client-secret-that-is-a-credential"
	testProxy   = "http://u:proxy-password-credential@proxy.internal:3128"
)

// startJS starts an embedded nats-server with JetStream in a temporary
// directory and returns a JetStream context on a connection to it.
func startJS(t testing.TB) natsjs.JetStream {
	t.Helper()
	ns, err := StartEmbedded(config.NATS{Listen: "127.0.0.1:-1"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func testKey(fill byte) []byte { return bytes.Repeat([]byte{fill}, 32) }

func openStore(t *testing.T, js natsjs.JetStream, opts ...StoreOption) *EndpointStore {
	t.Helper()
	s, err := OpenEndpointStore(t.Context(), js, testKey(1), 1, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func testSpec(id string) config.EndpointSpec {
	four := 4
	return config.EndpointSpec{
		ID:        id,
		URL:       "https://" + id + ".example.com/hooks",
		Events:    []string{"order.*"},
		Tenant:    "acme",
		Headers:   map[string]config.Secret{"X-Api-Key": config.NewSecret(testHeader)},
		Secrets:   []config.Secret{config.NewSecret(testSecret)},
		Overrides: config.Overrides{RetryMaxAttempts: &four},
		Auth:      config.Auth{Type: "oauth2", TokenURL: "https://id.example.com/token", ClientID: "hookjet", ClientSecret: config.NewSecret(testClient)},
		Proxy:     testProxy,
	}
}

func TestEndpointStoreCreateGetResolve(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	rec := s.Record(testSpec("crm"))
	rec.CreatedAt = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	rec.UpdatedAt = rec.CreatedAt
	if err := s.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, s.Record(testSpec("crm"))); !errors.Is(err, api.ErrEndpointExists) {
		t.Fatalf("second create: %v, want api.ErrEndpointExists", err)
	}
	got, err := s.Get(ctx, "crm")
	if err != nil {
		t.Fatal(err)
	}
	defaults := config.Default().Defaults
	ep, err := s.Resolve(got, defaults)
	if err != nil {
		t.Fatal(err)
	}
	if ep.Source != config.SourceAPI || ep.URL != "https://crm.example.com/hooks" || ep.Tenant != "acme" ||
		!ep.CreatedAt.Equal(rec.CreatedAt) || ep.Retry.MaxAttempts != 4 || ep.Retry.Base != defaults.Retry.Base {
		t.Errorf("resolved = %+v", ep)
	}
	if len(ep.Secrets) != 1 || ep.Secrets[0].Reveal() != testSecret || ep.Headers["X-Api-Key"].Reveal() != testHeader {
		t.Error("secrets or headers did not survive the round trip")
	}
	if ep.Auth.Type != "oauth2" || ep.Auth.ClientSecret.Reveal() != testClient || ep.Auth.TokenURL != "https://id.example.com/token" || ep.Proxy != testProxy {
		t.Errorf("auth %v or proxy did not survive the round trip", ep.Auth)
	}
	if _, err := s.Get(ctx, "nope"); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Errorf("Get(nope) = %v", err)
	}
}

// TestEndpointBucketShowsNoSecret reads the bucket as the nats CLI would and
// looks for any secret in clear text or in base64.
func TestEndpointBucketShowsNoSecret(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	if err := s.Create(ctx, s.Record(testSpec("crm"))); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, EndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, "crm")
	if err != nil {
		t.Fatal(err)
	}
	raw := string(e.Value())
	if !strings.Contains(raw, `"url":"https://crm.example.com/hooks"`) {
		t.Fatalf("raw value does not look like a record: %s", raw)
	}
	key, _ := config.DecodeSecret(testSecret)
	for _, needle := range []string{
		testSecret, strings.TrimPrefix(testSecret, "whsec_"), base64.StdEncoding.EncodeToString([]byte(testSecret)),
		base64.StdEncoding.EncodeToString(key), testHeader, base64.StdEncoding.EncodeToString([]byte(testHeader)),
		testClient, "proxy-password", "id.example.com", base64.StdEncoding.EncodeToString([]byte(testClient)),
	} {
		if strings.Contains(raw, needle) {
			t.Errorf("raw KV value contains %q", needle)
		}
	}
}

func TestEndpointStoreWrongKeyOrMovedValue(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	if err := s.Create(ctx, s.Record(testSpec("a"))); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Get(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := OpenEndpointStore(ctx, js, testKey(2), 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Resolve(rec, config.Default().Defaults); !errors.Is(err, seal.ErrOpen) {
		t.Errorf("resolve with another key: %v", err)
	}
	moved := rec
	moved.ID = "b" // a sealed secret copied to another endpoint
	_, err = s.Spec(moved)
	if !errors.Is(err, seal.ErrOpen) {
		t.Fatalf("moved secret opened: %v", err)
	}
	if strings.Contains(err.Error(), strings.TrimPrefix(testSecret, "whsec_")) || !strings.Contains(err.Error(), "secrets[0]") {
		t.Errorf("error %q shows the secret or does not name the field", err)
	}
}

func TestEndpointStoreUpdate(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	if err := s.Create(ctx, s.Record(testSpec("a"))); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if _, err := s.Update(ctx, "a", func(r *EndpointRecord) error { r.URL = "https://changed/"; return refused }); !errors.Is(err, refused) {
		t.Fatalf("update = %v", err)
	}
	if rec, _ := s.Get(ctx, "a"); rec.URL != "https://a.example.com/hooks" {
		t.Fatal("a refused update changed the record")
	}
	// Concurrent updates each see the other's write: none is lost.
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if _, err := s.Update(ctx, "a", func(r *EndpointRecord) error {
				r.Description += "x"
				return nil
			}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if rec, _ := s.Get(ctx, "a"); rec.Description != "xxxxxxxx" {
		t.Errorf("description = %q after 8 concurrent appends", rec.Description)
	}
	if _, err := s.Update(ctx, "nope", func(*EndpointRecord) error { return nil }); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Errorf("update unknown = %v", err)
	}
}

func TestEndpointStoreDropsExpiredSecrets(t *testing.T) {
	js := startJS(t)
	now := time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)
	s := openStore(t, js, StoreClock(func() time.Time { return now }))
	spec := testSpec("a")
	spec.Secrets = []config.Secret{config.NewSecret(testSecret2), config.NewSecret(testSecret)}
	spec.SecretExpiry = []time.Time{{}, now.Add(time.Hour)}
	rec := s.Record(spec)
	ep, err := s.Resolve(rec, config.Default().Defaults)
	if err != nil || len(ep.Secrets) != 2 || !ep.SecretExpiry[1].Equal(now.Add(time.Hour)) {
		t.Fatalf("during the grace: %d secrets, expiry %v, %v", len(ep.Secrets), ep.SecretExpiry, err)
	}
	now = now.Add(time.Hour)
	ep, err = s.Resolve(rec, config.Default().Defaults)
	if err != nil || len(ep.Secrets) != 1 || ep.Secrets[0].Reveal() != testSecret2 {
		t.Fatalf("after the grace: %d secrets, %v", len(ep.Secrets), err)
	}
}

func TestEndpointStoreWatch(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	kv, err := js.KeyValue(ctx, EndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	// A disabled state of the first design: skipped, not an error.
	if _, err := kv.Put(ctx, "legacy", []byte(`{"reason":"gone","at":"2025-01-01T00:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "gone"} {
		if err := s.Create(ctx, s.Record(testSpec(id))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	type event struct {
		id  string
		url string // "" for a delete
	}
	events := make(chan event, 16)
	stop, err := s.Watch(ctx, func(id string, rec *EndpointRecord) {
		ev := event{id: id}
		if rec != nil {
			ev.url = rec.URL
		}
		events <- ev
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	var initial []string
	for len(events) > 0 {
		initial = append(initial, (<-events).id)
	}
	if strings.Join(initial, ",") != "a,b" {
		t.Fatalf("replayed %v before Watch returned, want a,b", initial)
	}
	if _, err := s.Update(ctx, "a", func(r *EndpointRecord) error { r.URL = "https://new.example.com/"; return nil }); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []event{{"a", "https://new.example.com/"}, {"b", ""}} {
		select {
		case got := <-events:
			if got != want {
				t.Errorf("event %+v, want %+v", got, want)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("no event %+v within 2s", want)
		}
	}
	stop()
	if err := s.Create(ctx, s.Record(testSpec("late"))); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-events:
		t.Errorf("event %+v after stop", ev)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestEndpointStoreCreateReplacesLegacyState(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	kv, err := js.KeyValue(ctx, EndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, "old", []byte(`{"reason":"operator"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "old"); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Errorf("a legacy state reads as an endpoint: %v", err)
	}
	if err := s.Create(ctx, s.Record(testSpec("old"))); err != nil {
		t.Fatalf("create over a legacy state: %v", err)
	}
	if n, err := s.Count(ctx, true); err != nil || n != 1 {
		t.Errorf("count = %d, %v", n, err)
	}
}

func TestEndpointStoreDelete(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	if err := s.Delete(ctx, "nope"); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Errorf("delete unknown = %v", err)
	}
	if err := s.Create(ctx, s.Record(testSpec("a"))); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "a"); !errors.Is(err, api.ErrUnknownEndpoint) {
		t.Errorf("get after delete = %v", err)
	}
	if err := s.Create(ctx, s.Record(testSpec("a"))); err != nil {
		t.Errorf("create after delete = %v", err)
	}
}

func TestEnsureStreamsKeepsTheStoreBucket(t *testing.T) {
	js := startJS(t)
	ctx := context.Background()
	s := openStore(t, js)
	cfg := config.Default()
	if err := EnsureStreams(ctx, js, &cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, s.Record(testSpec("a"))); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, EndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.History() != 1 || st.Bytes() == 0 {
		t.Errorf("bucket status history %d bytes %d", st.History(), st.Bytes())
	}
}

// A watch whose fn is slow falls behind and catches up; it never drops a
// change, even when far more than a subscription buffers (64 MB) is written
// meanwhile, and it reports no slow consumer.
func TestEndpointStoreWatchKeepsEveryChangeBehindASlowReader(t *testing.T) {
	ns, err := StartEmbedded(config.NATS{Listen: "127.0.0.1:-1"}, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var slow sync.Once
	slowErr := make(chan error, 1)
	nc, err := nats.Connect(ns.ClientURL(), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrSlowConsumer) {
			slow.Do(func() { slowErr <- err })
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s := openStore(t, js)
	ctx := t.Context()
	const keys, revisions, size = 100, 4, 200 << 10 // 80 MB in all
	gate := make(chan struct{})
	var mu sync.Mutex
	seen := map[string]string{}
	stop, err := s.WatchEntries(ctx, func(e Entry) {
		<-gate
		mu.Lock()
		defer mu.Unlock()
		seen[e.ID] = string(e.value[:8])
	})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	kv, err := js.KeyValue(ctx, EndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	value := func(rev int) []byte {
		return append(fmt.Appendf(nil, "rev%05d", rev), bytes.Repeat([]byte{'x'}, size)...)
	}
	for rev := range revisions {
		for k := range keys {
			if _, err := kv.Put(ctx, fmt.Sprintf("k%03d", k), value(rev)); err != nil {
				t.Fatal(err)
			}
		}
	}
	close(gate)
	want := string(value(revisions - 1)[:8])
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		done := len(seen) == keys
		for _, v := range seen {
			done = done && v == want
		}
		n := len(seen)
		mu.Unlock()
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 30 s the watch has %d of %d keys at their last revision", n, keys)
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case err := <-slowErr:
		t.Fatalf("the watch's subscription dropped messages: %v", err)
	default:
	}
}

// PutAll stores every definition in atomic batches, each value with the
// digest of its definition beside it; the digest changes with anything
// that changes a delivery.
func TestEndpointStorePutAllAndDigest(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js, StoreBucket(ConfigEndpointBucket, "config endpoints"))
	ctx := t.Context()
	const n = 2500
	specs := make([]config.EndpointSpec, n)
	for i := range specs {
		specs[i] = testSpec(fmt.Sprintf("ep%04d", i))
	}
	failed, err := s.PutAll(ctx, specs)
	if err != nil || len(failed) > 0 {
		t.Fatalf("PutAll: %v (%d failed)", err, len(failed))
	}
	st, err := js.Stream(ctx, "KV_"+ConfigEndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	if !st.CachedInfo().Config.AllowAtomicPublish {
		t.Error("the bucket's stream does not take atomic batches after PutAll")
	}
	if got := st.CachedInfo().State.Msgs; got != n {
		t.Fatalf("%d values stored, want %d", got, n)
	}
	var mu sync.Mutex
	got := map[string]Entry{}
	stop, err := s.WatchEntries(ctx, func(e Entry) {
		mu.Lock()
		defer mu.Unlock()
		got[e.ID] = e
	})
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if len(got) != n {
		t.Fatalf("the watch's first values are %d, want %d", len(got), n)
	}
	for _, spec := range specs {
		e := got[spec.ID]
		if e.Digest != s.Digest(spec) {
			t.Fatalf("%s: digest %q beside the value, want %q", spec.ID, e.Digest, s.Digest(spec))
		}
		rec, ok, err := e.Record()
		if err != nil || !ok {
			t.Fatalf("%s: %v %v", spec.ID, ok, err)
		}
		back, err := s.Spec(rec)
		if err != nil || back.URL != spec.URL || back.Headers["X-Api-Key"].Reveal() != testHeader {
			t.Fatalf("%s: opened %+v, %v", spec.ID, back, err)
		}
	}
	base := testSpec("crm")
	if s.Digest(base) != s.Digest(testSpec("crm")) {
		t.Fatal("equal definitions have different digests")
	}
	five := 5
	hour := time.Now().Add(time.Hour)
	for name, change := range map[string]func(*config.EndpointSpec){
		"url":    func(sp *config.EndpointSpec) { sp.URL += "x" },
		"events": func(sp *config.EndpointSpec) { sp.Events = []string{"order.>"} },
		"secret": func(sp *config.EndpointSpec) { sp.Secrets = []config.Secret{config.NewSecret(testSecret2)} },
		"expiry": func(sp *config.EndpointSpec) { sp.SecretExpiry = []time.Time{hour} },
		"header": func(sp *config.EndpointSpec) {
			sp.Headers = map[string]config.Secret{"X-Api-Key": config.NewSecret("other")}
		},
		"tenant":  func(sp *config.EndpointSpec) { sp.Tenant = "other" },
		"retries": func(sp *config.EndpointSpec) { sp.Overrides.RetryMaxAttempts = &five },
		"tls":     func(sp *config.EndpointSpec) { sp.InsecureSkipVerify = true },
	} {
		sp := testSpec("crm")
		change(&sp)
		if s.Digest(sp) == s.Digest(base) {
			t.Errorf("a changed %s leaves the digest as it was", name)
		}
	}
	other := openStore(t, js, StoreBucket(ConfigEndpointBucket, "config endpoints"))
	if other.Digest(base) != s.Digest(base) {
		t.Error("two stores with the same secret key disagree on a digest")
	}
}

// A broker destination's credentials are sealed in the bucket and come
// back whole; its other fields are stored as they are.
func TestEndpointStoreSealsDestinationCredentials(t *testing.T) {
	js := startJS(t)
	s := openStore(t, js)
	ctx := t.Context()
	spec := testSpec("broker")
	spec.URL = ""
	spec.Destination = config.Destination{Type: config.DestinationRabbitMQ, URL: config.NewSecret("amqp://hook:rabbit-pw-1@rabbit.example.com/vh"), Exchange: "hooks", RoutingKey: "orders.{type}"}
	if err := s.Create(ctx, s.Record(spec)); err != nil {
		t.Fatal(err)
	}
	kspec := testSpec("stream")
	kspec.URL = ""
	kspec.Destination = config.Destination{Type: config.DestinationKafka, Brokers: []string{"k1:9092"}, Topic: "t", SASL: config.SASL{Mechanism: "PLAIN", User: "u", Password: config.NewSecret("kafka-pw-2")}}
	if err := s.Create(ctx, s.Record(kspec)); err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, EndpointBucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"broker", "stream"} {
		e, err := kv.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if raw := string(e.Value()); strings.Contains(raw, "rabbit-pw-1") || strings.Contains(raw, "kafka-pw-2") || strings.Contains(raw, "hook:") {
			t.Errorf("raw KV value shows a credential: %s", raw)
		}
	}
	got, err := s.Get(ctx, "broker")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := s.Resolve(got, config.Default().Defaults)
	if err != nil {
		t.Fatal(err)
	}
	if d := ep.Destination; d.Type != config.DestinationRabbitMQ || d.URL.Reveal() != "amqp://hook:rabbit-pw-1@rabbit.example.com/vh" || d.Exchange != "hooks" || d.RoutingKey != "orders.{type}" {
		t.Errorf("destination = %+v (%s)", d, d.URL.Reveal())
	}
	got, _ = s.Get(ctx, "stream")
	ep, _ = s.Resolve(got, config.Default().Defaults)
	if d := ep.Destination; d.SASL.Password.Reveal() != "kafka-pw-2" || d.Brokers[0] != "k1:9092" {
		t.Errorf("destination = %+v", d)
	}
}

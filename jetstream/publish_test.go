package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/publish"
)

// startEvents starts an embedded server with hookjet's streams and returns
// an EventPublisher on it.
func startEvents(t *testing.T) (natsjs.JetStream, *EventPublisher) {
	t.Helper()
	js := startJS(t)
	cfg := config.Default()
	cfg.Streams.MaxBytes, cfg.Streams.TasksMaxBytes, cfg.Streams.DLQMaxBytes = 64<<20, 64<<20, 16<<20
	cfg.Log.MaxBytes = 16 << 20
	if err := EnsureStreams(t.Context(), js, &cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	p, err := NewEventPublisher(js.Conn())
	if err != nil {
		t.Fatal(err)
	}
	return js, p
}

// storedEvent reads the event at seq of HOOKJET_EVENTS.
func storedEvent(t *testing.T, js natsjs.JetStream, seq uint64) *natsjs.RawStreamMsg {
	t.Helper()
	st, err := js.Stream(t.Context(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(t.Context(), seq)
	if err != nil {
		t.Fatalf("event #%d: %v", seq, err)
	}
	return m
}

func events(prefix string, n int) []publish.Event {
	out := make([]publish.Event, n)
	for i := range out {
		out[i] = publish.Event{ID: fmt.Sprintf("%s-%d", prefix, i), Type: "order.created", Data: fmt.Appendf(nil, `{"n":%d}`, i)}
	}
	return out
}

// A batch is stored as one atomic batch, in order, with its ids, tenants,
// keys and headers. (The server keeps the Nats-Batch-* headers on the
// stored messages, as it does for the outbox's batches.)
func TestEventPublisherStoresABatchInOrder(t *testing.T) {
	js, p := startEvents(t)
	evs := events("evt", 5)
	evs[1].Tenant, evs[1].Key = "acme", "customer-7"
	evs[2].Header = map[string][]string{"Content-Type": {"text/plain"}}
	res := p.Store(t.Context(), evs)
	for i, r := range res {
		if r.Err != nil || r.Duplicate || r.Stream != EventsStream || r.Seq != uint64(i+1) {
			t.Fatalf("event %d: %+v, want stored as %s #%d", i, r, EventsStream, i+1)
		}
		m := storedEvent(t, js, r.Seq)
		if got := m.Header.Get(HdrMsgID); got != evs[i].ID || string(m.Data) != string(evs[i].Data) || m.Subject != EventsPrefix+"order.created" {
			t.Errorf("#%d: id %q subject %q data %q, want %q", r.Seq, got, m.Subject, m.Data, evs[i].ID)
		}
	}
	if m := storedEvent(t, js, 2); m.Header.Get(HdrTenant) != "acme" || m.Header.Get(publish.HeaderKey) != "customer-7" {
		t.Errorf("tenant and key not stored: %v", m.Header)
	}
	if m := storedEvent(t, js, 3); m.Header.Get("Content-Type") != "text/plain" {
		t.Errorf("Content-Type not stored: %v", m.Header)
	}
}

// A batch holding ids stored before (which the server refuses whole) stores
// every new event and reports the old ones as duplicates of their first
// copy.
func TestEventPublisherSortsOutDuplicates(t *testing.T) {
	js, p := startEvents(t)
	p.costs.each = time.Hour // one by one measured dear: every batch goes atomic
	first := p.Store(t.Context(), events("evt", 3))
	evs := append(events("evt", 3)[1:2], events("new", 20)...)
	evs = append(evs, events("evt", 3)[2])
	res := p.Store(t.Context(), evs)
	for i, r := range res {
		dup := i == 0 || i == len(evs)-1
		if r.Err != nil || r.Duplicate != dup {
			t.Fatalf("event %d (%s): %+v, duplicate want %v", i, evs[i].ID, r, dup)
		}
	}
	if res[0].Seq != first[1].Seq || res[len(res)-1].Seq != first[2].Seq {
		t.Errorf("duplicates name #%d and #%d, want the first copies #%d and #%d", res[0].Seq, res[len(res)-1].Seq, first[1].Seq, first[2].Seq)
	}
	st, _ := js.Stream(t.Context(), EventsStream)
	info, err := st.Info(t.Context())
	if err != nil || info.State.Msgs != 23 {
		t.Fatalf("stream holds %d events (%v), want 23", info.State.Msgs, err)
	}
}

// countingStore counts the batches and events a real store receives.
type countingStore struct {
	real            publish.Store
	batches, events atomic.Int64
}

func (c *countingStore) Store(ctx context.Context, evs []publish.Event) []publish.Result {
	c.batches.Add(1)
	c.events.Add(int64(len(evs)))
	return c.real.Store(ctx, evs)
}

// Concurrent requests share batches; each is answered with its own
// result, and an id sent twice at once is stored once.
func TestCommitterGroupsConcurrentRequests(t *testing.T) {
	js, p := startEvents(t)
	store := &countingStore{real: p}
	c := publish.New(store, publish.WithWriters(1))
	const n = 400
	var wg sync.WaitGroup
	results := make([]publish.Result, n+1)
	errs := make([]error, n+1)
	for i := range n + 1 {
		id := fmt.Sprintf("evt-%d", i)
		if i == n {
			id = "evt-7" // the same id as another request
		}
		wg.Go(func() {
			res, err := c.Publish(t.Context(), []publish.Event{{ID: id, Type: "order.created", Data: []byte("{}")}})
			errs[i] = err
			if err == nil {
				results[i] = res[0]
			}
		})
	}
	wg.Wait()
	if err := c.Close(t.Context()); err != nil {
		t.Fatal(err)
	}
	dups := 0
	for i, r := range results {
		if errs[i] != nil || r.Err != nil {
			t.Fatalf("request %d: %v %v", i, errs[i], r.Err)
		}
		if r.Duplicate {
			dups++
		}
	}
	if dups != 1 || results[7].Seq != results[n].Seq {
		t.Errorf("%d duplicates, evt-7 at #%d and #%d: want one duplicate naming the first copy", dups, results[7].Seq, results[n].Seq)
	}
	st, _ := js.Stream(t.Context(), EventsStream)
	info, err := st.Info(t.Context())
	if err != nil || info.State.Msgs != n {
		t.Fatalf("stream holds %d events (%v), want %d", info.State.Msgs, err, n)
	}
	if b := store.batches.Load(); b >= n/2 {
		t.Errorf("%d requests went in %d batches: not grouped", n+1, b)
	}
	t.Logf("%d requests in %d batches", n+1, store.batches.Load())
	if _, err := c.Publish(t.Context(), events("late", 1)); !errors.Is(err, publish.ErrClosed) {
		t.Errorf("publish after Close: %v, want ErrClosed", err)
	}
}

// startResponder starts a committer storing through p and answers publish
// requests on js's connection with it, until the test ends.
func startResponder(t *testing.T, js natsjs.JetStream, p *EventPublisher, opts ...publish.Option) *publish.Committer {
	t.Helper()
	c := publish.New(p, opts...)
	r, err := ServePublish(js.Conn(), c, 100, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.Stop()
		_ = c.Close(context.Background())
	})
	return c
}

// A request to hookjet.publish.<type> is answered once stored, with its
// id; a second with the same id is a duplicate; a bad request's reply names
// the problem; every event keeps its tenant and key.
func TestPublishResponder(t *testing.T) {
	js, p := startEvents(t)
	startResponder(t, js, p, publish.WithMaxPayload(1000))
	ev := publish.Event{ID: "evt_1", Type: "order.created", Data: []byte(`{"a":1}`), Tenant: "acme", Key: "k1"}
	got, err := PublishRequest(t.Context(), js.Conn(), ev)
	if err != nil || got.ID != "evt_1" || got.Duplicate || got.Seq != 1 || got.Stream != EventsStream {
		t.Fatalf("first publish: %+v %v", got, err)
	}
	if m := storedEvent(t, js, 1); m.Header.Get(HdrTenant) != "acme" || m.Header.Get(publish.HeaderKey) != "k1" {
		t.Errorf("tenant and key not stored: %v", m.Header)
	}
	if got, err = PublishRequest(t.Context(), js.Conn(), ev); err != nil || !got.Duplicate || got.Seq != 1 {
		t.Errorf("second publish: %+v %v, want a duplicate of #1", got, err)
	}
	if got, err = PublishRequest(t.Context(), js.Conn(), publish.Event{Type: "order.created", Data: []byte(`{}`)}); err != nil || len(got.ID) < 10 || got.Seq != 2 {
		t.Errorf("publish without id: %+v %v, want a generated id", got, err)
	}
	for _, tt := range []struct {
		ev    publish.Event
		field string
	}{
		{publish.Event{Type: "order.created", Tenant: "ACME"}, "tenant"},
		{publish.Event{Type: "order.created", Key: string(make([]byte, 300))}, "key"},
		{publish.Event{Type: "order.created", ID: "has space"}, "id"},
		{publish.Event{Type: "order.created", Data: make([]byte, 1001)}, "data"},
		{publish.Event{Type: "order." + strings.Repeat("x", 300)}, "type"},
	} {
		_, err := PublishRequest(t.Context(), js.Conn(), tt.ev)
		re, ok := errors.AsType[*publish.ReplyError](err)
		if !ok || re.Field != tt.field {
			t.Errorf("bad %s: %v, want a refusal naming %s", tt.field, err, tt.field)
		}
	}
}

// The way a batch is stored follows what each way was measured to cost,
// and the dearer way is tried again now and then.
func TestEventPublisherChoosesTheCheaperWay(t *testing.T) {
	var c costs
	if !c.useAtomic(10) {
		t.Fatal("atomic batches not tried first")
	}
	c.record(true, 10, 20*time.Millisecond)
	if c.useAtomic(10) {
		t.Fatal("one by one not tried once")
	}
	c.record(false, 10, 10*time.Millisecond) // 1 ms per event
	atomic := 0
	for range probeEvery {
		if c.useAtomic(10) {
			atomic++
		}
	}
	if atomic != 1 {
		t.Errorf("10 events at 1 ms each vs 20 ms a batch: atomic %d times in %d, want once (the probe)", atomic, probeEvery)
	}
	if !c.useAtomic(30) {
		t.Errorf("30 events at 1 ms each vs 20 ms a batch: not atomic")
	}
}

// When HOOKJET_EVENTS refuses new events (full, with Discard: New), POST
// /api/v1/events answers 503 with Retry-After and an error naming the
// refusal, for one event and for a batch stored either way, and the reply
// to a publish request names it too. Nothing is stored.
func TestPublishRefusedWhenTheStreamIsFull(t *testing.T) {
	js, p := startEvents(t)
	c := startResponder(t, js, p)
	if res := p.Store(t.Context(), events("first", 1)); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	st, err := js.Stream(t.Context(), EventsStream)
	if err != nil {
		t.Fatal(err)
	}
	sc := st.CachedInfo().Config
	sc.MaxMsgs, sc.Discard = 1, natsjs.DiscardNew
	if _, err := js.UpdateStream(t.Context(), sc); err != nil {
		t.Fatal(err)
	}
	const refusal = "JetStream cannot store the events: "
	h := publish.NewHandler(c)
	for _, tt := range []struct {
		name   string
		body   string
		atomic bool
	}{
		{"one event", `{"id":"evt_one","type":"order.created","data":1}`, false},
		{"atomic batch", `{"events":[{"type":"order.created","data":1},{"type":"order.paid","data":2}]}`, true},
		{"batch one by one", `{"events":[{"type":"order.created","data":1},{"type":"order.paid","data":2}]}`, false},
	} {
		p.costs.each, p.costs.batch = time.Nanosecond, time.Hour // one by one cheaper
		if tt.atomic {
			p.costs.each, p.costs.batch = time.Hour, time.Nanosecond
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/v1/events", strings.NewReader(tt.body)))
		var out struct{ Error string }
		if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
			t.Fatalf("%s: HTTP %d, body %q: %v", tt.name, rec.Code, rec.Body, err)
		}
		t.Logf("%s: HTTP %d %s", tt.name, rec.Code, out.Error)
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
			!strings.HasPrefix(out.Error, refusal) || !strings.Contains(out.Error, "maximum messages") {
			t.Errorf("%s: HTTP %d (Retry-After %q) %q, want 503 naming the full stream", tt.name, rec.Code, rec.Header().Get("Retry-After"), out.Error)
		}
	}
	_, err = PublishRequest(t.Context(), js.Conn(), publish.Event{Type: "order.created", Data: []byte(`{}`)})
	if re, ok := errors.AsType[*publish.ReplyError](err); !ok || re.Field != "" ||
		!strings.HasPrefix(re.Error(), refusal) || !strings.Contains(re.Error(), "maximum messages") {
		t.Errorf("publish request: %v, want a reply naming the full stream", err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("stream holds %d events, want only the first", info.State.Msgs)
	}
}

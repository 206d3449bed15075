package publish

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// blockedStore holds every batch until release is closed, as a JetStream
// that stopped answering does; entered gets a token per batch taken.
type blockedStore struct {
	entered chan struct{}
	release chan struct{}
}

func (s *blockedStore) Store(_ context.Context, events []Event) []Result {
	s.entered <- struct{}{}
	<-s.release
	out := make([]Result, len(events))
	for i := range out {
		out[i] = Result{Stream: "HOOKJET_EVENTS", Seq: uint64(i + 1)}
	}
	return out
}

// A request that does not fit in the queue is refused at once: ErrBusy
// from Publish, 503 naming the full queue over HTTP, an error reply over
// NATS. The requests queued are stored once the store answers again.
func TestCommitterRefusesWhenTheQueueIsFull(t *testing.T) {
	store := &blockedStore{entered: make(chan struct{}, 2), release: make(chan struct{})}
	c := New(store, WithQueue(MaxBatch))
	var release sync.Once
	defer func() {
		release.Do(func() { close(store.release) })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	held := make(chan error, 2)
	send := func(n int, prefix string) {
		evs := make([]Event, n)
		for i := range evs {
			evs[i] = Event{ID: prefix + NewID(), Type: "order.created", Data: []byte("1")}
		}
		_, err := c.Publish(context.Background(), evs)
		held <- err
	}
	go send(1, "taken-") // the writer takes it and waits in the store
	<-store.entered
	go send(MaxBatch, "queued-") // fills the queue
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		c.mu.Lock()
		n := c.queued
		c.mu.Unlock()
		if n == MaxBatch {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d events queued, want %d", n, MaxBatch)
		}
	}

	// Bounded, so that a request queued by mistake fails the test instead
	// of waiting for the blocked store.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := c.Publish(ctx, []Event{{ID: "evt_late", Type: "order.created", Data: []byte("1")}}); !errors.Is(err, ErrBusy) {
		t.Errorf("Publish into a full queue: %v, want ErrBusy", err)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/api/v1/events", strings.NewReader(`{"type":"order.created","data":1}`))
	NewHandler(c).ServeHTTP(rec, req)
	var out struct{ Error string }
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || rec.Code != http.StatusServiceUnavailable ||
		rec.Header().Get("Retry-After") == "" || !strings.Contains(out.Error, ErrBusy.Error()) {
		t.Errorf("HTTP into a full queue: %d (Retry-After %q) %q %v, want 503 naming the full queue", rec.Code, rec.Header().Get("Retry-After"), rec.Body, err)
	}
	_, err := ParseReply(c.Answer(ctx, "order.created", nil, []byte("1")))
	if re, ok := errors.AsType[*ReplyError](err); !ok || re.Field != "" || !strings.Contains(re.Error(), ErrBusy.Error()) {
		t.Errorf("NATS request into a full queue: %v, want an error reply naming the full queue", err)
	}

	release.Do(func() { close(store.release) })
	for range 2 {
		if err := <-held; err != nil {
			t.Errorf("a request taken before the queue filled: %v", err)
		}
	}
}

// mapLedger is a ledger in memory.
type mapLedger struct {
	mu  sync.Mutex
	ids map[string]uint64
}

func (l *mapLedger) Seen(id string) (uint64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	seq, ok := l.ids[id]
	return seq, ok, nil
}

func (l *mapLedger) FirstSeen(id string, seq uint64) (uint64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if first, ok := l.ids[id]; ok {
		return first, first != seq, nil
	}
	l.ids[id] = seq
	return seq, false, nil
}

// An id the ledger remembers is answered as a duplicate of its first copy
// and never reaches the store; the others are stored in one batch and
// recorded in the ledger under their sequence.
func TestCommitterAnswersRememberedIDsFromTheLedger(t *testing.T) {
	store := &recordingStore{}
	ledger := &mapLedger{ids: map[string]uint64{"evt_old": 41}}
	c := New(store, WithLedger(ledger, "HOOKJET_EVENTS"))
	t.Cleanup(func() { _ = c.Close(context.Background()) })
	res, err := c.Publish(t.Context(), []Event{{ID: "evt_new", Type: "a"}, {ID: "evt_old", Type: "a"}, {ID: "evt_old", Type: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []Result{{Stream: "HOOKJET_EVENTS", Seq: 1}, {Stream: "HOOKJET_EVENTS", Seq: 41, Duplicate: true}, {Stream: "HOOKJET_EVENTS", Seq: 41, Duplicate: true}}
	for i := range want {
		if res[i] != want[i] {
			t.Errorf("result %d: %+v, want %+v", i, res[i], want[i])
		}
	}
	if len(store.got) != 1 || store.got[0].ID != "evt_new" {
		t.Errorf("stored %+v, want evt_new only", store.got)
	}
	if seq, ok, _ := ledger.Seen("evt_new"); !ok || seq != 1 {
		t.Errorf("the ledger has evt_new at %d (%v), want 1", seq, ok)
	}
	again, err := c.Publish(t.Context(), []Event{{ID: "evt_new", Type: "a"}})
	if err != nil || !again[0].Duplicate || again[0].Seq != 1 || len(store.got) != 1 {
		t.Errorf("evt_new again: %+v %v (stored %d), want a duplicate of #1", again, err, len(store.got))
	}
}

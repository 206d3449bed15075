package webhook_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/hookjet/hookjet/webhook"
)

// signedRequest builds a POST signed with the spec secret at specTime.
func signedRequest(t *testing.T, id string, body []byte) *http.Request {
	t.Helper()
	ts := strconv.FormatInt(specTS, 10)
	r := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(body))
	r.Header.Set(webhook.HeaderID, id)
	r.Header.Set(webhook.HeaderTimestamp, ts)
	r.Header.Set(webhook.HeaderSignature, refSign(t, specSecret, id, ts, body))
	return r
}

func newVerifier(t *testing.T) *webhook.Verifier {
	t.Helper()
	v, err := webhook.NewVerifier([]string{specSecret}, fixedClock(specTime))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHandler(t *testing.T) {
	body := []byte(`{"type":"order.created"}`)
	type req struct {
		r          func(t *testing.T) *http.Request
		wantStatus int
		wantCalls  int32 // calls of next so far
	}
	signed := func(id string) func(t *testing.T) *http.Request {
		return func(t *testing.T) *http.Request { return signedRequest(t, id, body) }
	}
	tests := []struct {
		name     string
		dedupe   bool
		statuses []int // what next answers, call by call; 204 when exhausted
		reqs     []req
	}{
		{name: "first delivery reaches next", dedupe: true, reqs: []req{
			{r: signed("evt_1"), wantStatus: http.StatusNoContent, wantCalls: 1},
		}},
		{name: "duplicate answered without next", dedupe: true, reqs: []req{
			{r: signed("evt_1"), wantStatus: http.StatusNoContent, wantCalls: 1},
			{r: signed("evt_1"), wantStatus: http.StatusOK, wantCalls: 1},
			{r: signed("evt_2"), wantStatus: http.StatusNoContent, wantCalls: 2},
			{r: signed("evt_1"), wantStatus: http.StatusOK, wantCalls: 2},
		}},
		{name: "without a deduper every delivery reaches next", dedupe: false, reqs: []req{
			{r: signed("evt_1"), wantStatus: http.StatusNoContent, wantCalls: 1},
			{r: signed("evt_1"), wantStatus: http.StatusNoContent, wantCalls: 2},
		}},
		{name: "failed delivery is processed again on retry", dedupe: true, statuses: []int{http.StatusInternalServerError, http.StatusServiceUnavailable}, reqs: []req{
			{r: signed("evt_1"), wantStatus: http.StatusInternalServerError, wantCalls: 1},
			{r: signed("evt_1"), wantStatus: http.StatusServiceUnavailable, wantCalls: 2},
			{r: signed("evt_1"), wantStatus: http.StatusNoContent, wantCalls: 3},
			{r: signed("evt_1"), wantStatus: http.StatusOK, wantCalls: 3},
		}},
		{name: "redirect status counts as failure", dedupe: true, statuses: []int{http.StatusFound}, reqs: []req{
			{r: signed("evt_1"), wantStatus: http.StatusFound, wantCalls: 1},
			{r: signed("evt_1"), wantStatus: http.StatusNoContent, wantCalls: 2},
		}},
		{name: "bad signature", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				r := signedRequest(t, "evt_1", body)
				r.Header.Set(webhook.HeaderSignature, specSig)
				return r
			}, wantStatus: http.StatusUnauthorized},
			// A forged request must not poison the deduper.
			{r: signed("evt_1"), wantStatus: http.StatusNoContent, wantCalls: 1},
		}},
		{name: "tampered body", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				r := signedRequest(t, "evt_1", body)
				r.Body = io.NopCloser(strings.NewReader(`{"type":"order.deleted"}`))
				return r
			}, wantStatus: http.StatusUnauthorized},
		}},
		{name: "missing header", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				r := signedRequest(t, "evt_1", body)
				r.Header.Del(webhook.HeaderTimestamp)
				return r
			}, wantStatus: http.StatusBadRequest},
		}},
		{name: "stale timestamp", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				ts := strconv.FormatInt(specTime.Add(-time.Hour).Unix(), 10)
				r := signedRequest(t, "evt_1", body)
				r.Header.Set(webhook.HeaderTimestamp, ts)
				r.Header.Set(webhook.HeaderSignature, refSign(t, specSecret, "evt_1", ts, body))
				return r
			}, wantStatus: http.StatusUnauthorized},
		}},
		{name: "not a POST", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				r := signedRequest(t, "evt_1", nil)
				r.Method = http.MethodGet
				return r
			}, wantStatus: http.StatusMethodNotAllowed},
		}},
		{name: "body at the limit", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				return signedRequest(t, "evt_1", bytes.Repeat([]byte("x"), webhook.MaxBodyBytes))
			}, wantStatus: http.StatusNoContent, wantCalls: 1},
		}},
		{name: "body over the limit, length declared", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				return signedRequest(t, "evt_1", bytes.Repeat([]byte("x"), webhook.MaxBodyBytes+1))
			}, wantStatus: http.StatusRequestEntityTooLarge},
		}},
		{name: "body over the limit, length unknown", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				r := signedRequest(t, "evt_1", nil)
				r.ContentLength = -1
				r.Body = io.NopCloser(io.LimitReader(zeros{}, webhook.MaxBodyBytes+1))
				return r
			}, wantStatus: http.StatusRequestEntityTooLarge},
		}},
		{name: "unreadable body", dedupe: true, reqs: []req{
			{r: func(t *testing.T) *http.Request {
				r := signedRequest(t, "evt_1", body)
				r.Body = io.NopCloser(iotest.ErrReader(errors.New("connection reset")))
				return r
			}, wantStatus: http.StatusBadRequest},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newVerifier(t)
			var calls atomic.Int32
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n := calls.Add(1)
				got, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("next: reading body: %v", err)
				}
				// next gets exactly the body that was verified.
				if err := v.Verify(r.Header, got); err != nil {
					t.Errorf("next: body does not verify (%d bytes): %v", len(got), err)
				}
				status := http.StatusNoContent
				if int(n) <= len(tt.statuses) {
					status = tt.statuses[n-1]
				}
				w.WriteHeader(status)
			})
			var d *webhook.Deduper
			if tt.dedupe {
				d = webhook.NewDeduper(time.Hour, 100, fixedClock(specTime))
			}
			h := webhook.Handler(v, d, next)
			for i, rq := range tt.reqs {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, rq.r(t))
				if w.Code != rq.wantStatus {
					t.Errorf("request %d: status = %d, want %d (body %q)", i, w.Code, rq.wantStatus, w.Body)
				}
				if got := calls.Load(); got != rq.wantCalls {
					t.Errorf("request %d: next called %d times, want %d", i, got, rq.wantCalls)
				}
			}
		})
	}
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// TestHandlerOverHTTP runs the middleware behind a real server, as a
// receiver would.
func TestHandlerOverHTTP(t *testing.T) {
	var calls atomic.Int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusAccepted)
	})
	srv := httptest.NewServer(webhook.Handler(newVerifier(t), webhook.NewDeduper(time.Hour, 10, fixedClock(specTime)), next))
	defer srv.Close()

	body := []byte(`{"n":1}`)
	for i, want := range []int{http.StatusAccepted, http.StatusOK} {
		r := signedRequest(t, "evt_http", body)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = r.Header
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != want {
			t.Errorf("delivery %d: status = %d, want %d", i, resp.StatusCode, want)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("next called %d times, want 1", got)
	}
}

// TestHandlerDuplicateInFlight: a retry that arrives while the first delivery
// is still being processed is told to come back later, not acknowledged, so
// that a failure of the first cannot lose the event.
func TestHandlerDuplicateInFlight(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan int)
	var calls atomic.Int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			close(entered)
			w.WriteHeader(<-release)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	h := webhook.Handler(newVerifier(t), webhook.NewDeduper(time.Hour, 10, fixedClock(specTime)), next)
	body := []byte(`{}`)
	serve := func() int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, signedRequest(t, "evt_1", body))
		return w.Code
	}

	first := make(chan int)
	go func() { first <- serve() }()
	<-entered
	if got := serve(); got != http.StatusServiceUnavailable {
		t.Fatalf("duplicate during processing: status = %d, want %d", got, http.StatusServiceUnavailable)
	}
	release <- http.StatusInternalServerError
	if got := <-first; got != http.StatusInternalServerError {
		t.Fatalf("first delivery: status = %d, want 500", got)
	}
	// The first attempt failed, so the retry is processed.
	if got := serve(); got != http.StatusNoContent {
		t.Fatalf("retry after failure: status = %d, want 204", got)
	}
	if got := serve(); got != http.StatusOK {
		t.Fatalf("duplicate after success: status = %d, want 200", got)
	}
	if got := calls.Load(); got != 2 {
		t.Fatalf("next called %d times, want 2", got)
	}
}

func TestHandlerPanicForgetsID(t *testing.T) {
	var calls atomic.Int32
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			panic(http.ErrAbortHandler)
		}
	})
	h := webhook.Handler(newVerifier(t), webhook.NewDeduper(time.Hour, 10, fixedClock(specTime)), next)
	func() {
		defer func() {
			r := recover()
			if err, ok := r.(error); !ok || !errors.Is(err, http.ErrAbortHandler) {
				t.Fatalf("recovered %v, want http.ErrAbortHandler re-panicked", r)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), signedRequest(t, "evt_1", nil))
	}()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, signedRequest(t, "evt_1", nil))
	if w.Code != http.StatusOK || calls.Load() != 2 {
		t.Fatalf("after a panic: status %d, next called %d times; want 200 and 2", w.Code, calls.Load())
	}
}

func TestHandlerNilArguments(t *testing.T) {
	v := newVerifier(t)
	next := http.NotFoundHandler()
	tests := []struct {
		name string
		v    *webhook.Verifier
		next http.Handler
	}{
		{name: "nil verifier", next: next},
		{name: "nil next", v: v},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("Handler did not panic")
				}
			}()
			webhook.Handler(tt.v, nil, tt.next)
		})
	}
}

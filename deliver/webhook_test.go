package deliver_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hookjet/hookjet/deliver"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/signature"
	"github.com/hookjet/hookjet/webhook"
)

// Secrets of the endpoint in these tests: a rotation in progress, so every
// request carries two signatures and a receiver knowing either accepts it.
const (
	oldSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	newSecret = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
)

func testSigner(t testing.TB) *signature.Signer {
	t.Helper()
	var keys [][]byte
	for _, s := range []string{oldSecret, newSecret} {
		k, err := signature.DecodeSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	return signature.NewSigner(keys...)
}

func newClient(t testing.TB, opts deliver.ClientOptions) *deliver.Client {
	t.Helper()
	c := deliver.NewClient(opts)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// open returns ep's destination as the engine holds it: the interface.
func open(c *deliver.Client, ep destination.Endpoint) destination.Destination { return c.Open(ep) }

// TestWebhookSend sends one attempt through the destination interface to a
// receiver that verifies it as a customer would (package webhook, with
// either secret), and checks what the engine gets back.
func TestWebhookSend(t *testing.T) {
	type seen struct {
		header http.Header
		body   []byte
		errs   []error
	}
	got := make(chan seen, 1)
	verifiers := make([]*webhook.Verifier, 0, 2)
	for _, s := range []string{oldSecret, newSecret} {
		v, err := webhook.NewVerifier([]string{s})
		if err != nil {
			t.Fatal(err)
		}
		verifiers = append(verifiers, v)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		s := seen{header: r.Header.Clone(), body: body}
		if err != nil {
			s.errs = append(s.errs, err)
		}
		for _, v := range verifiers {
			s.errs = append(s.errs, v.Verify(r.Header, body))
		}
		got <- s
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)

	c := newClient(t, deliver.ClientOptions{Guard: deliver.NewGuard(true, nil), UserAgent: "hookjet/test"})
	d := open(c, destination.Endpoint{
		ID:      "crm",
		URL:     srv.URL + "/hooks",
		Header:  http.Header{"X-Api-Key": {"k-123"}, "Webhook-Id": {"forged"}},
		Signer:  testSigner(t),
		Timeout: 5 * time.Second,
	})
	payload := []byte(`{"order":42}`)
	before := time.Now()
	res := d.Send(t.Context(), destination.Request{
		EventID:     "evt_1",
		EventType:   "order.created",
		Tenant:      "acme",
		OrderingKey: "order-42",
		ContentType: "application/vnd.test+json",
		Payload:     payload,
		Trace:       http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
	})
	if res.Class != destination.Success || res.Status != http.StatusNoContent {
		t.Fatalf("Send = %+v, want success 204", res)
	}
	if res.Reason != "" || res.Err != nil || res.Response != nil {
		t.Errorf("Send = %+v: a success carries no reason, error or response", res)
	}
	if res.Sent.Before(before.Truncate(time.Second)) || res.Latency <= 0 {
		t.Errorf("Sent %v, Latency %v: want the attempt's start and a positive latency", res.Sent, res.Latency)
	}

	s := <-got
	for i, err := range s.errs {
		if err != nil {
			t.Errorf("receiver, check %d: %v", i, err)
		}
	}
	if !bytes.Equal(s.body, payload) {
		t.Errorf("body = %q, want %q", s.body, payload)
	}
	for name, want := range map[string]string{
		"Webhook-Id":           "evt_1",
		"Webhook-Timestamp":    strconv.FormatInt(res.Sent.Unix(), 10),
		"Content-Type":         "application/vnd.test+json",
		"X-Api-Key":            "k-123",
		"Hookjet-Ordering-Key": "order-42",
		"Traceparent":          "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
		"User-Agent":           "hookjet/test",
		"Hookjet-Event-Type":   "order.created",
		"Hookjet-Tenant":       "acme",
	} {
		if v := strings.Join(s.header.Values(name), ","); v != want {
			t.Errorf("%s = %q, want %q", name, v, want)
		}
	}
	if n := len(strings.Fields(s.header.Get("Webhook-Signature"))); n != 2 {
		t.Errorf("webhook-signature has %d signatures, want 2 (one per secret)", n)
	}
}

// TestWebhookClassification checks that what a webhook answers reaches the
// engine as the class, status, wait, reason and excerpt it decides from.
func TestWebhookClassification(t *testing.T) {
	mux := http.NewServeMux()
	status := func(code int, hdr ...string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			for i := 0; i+1 < len(hdr); i += 2 {
				w.Header().Set(hdr[i], hdr[i+1])
			}
			w.WriteHeader(code)
			if code >= 300 {
				_, _ = io.WriteString(w, "answer "+strconv.Itoa(code))
			}
		}
	}
	mux.Handle("/200", status(200))
	mux.Handle("/204", status(204))
	mux.Handle("/302", status(302, "Location", "https://example.com/"))
	mux.Handle("/408", status(408))
	mux.Handle("/410", status(410))
	mux.Handle("/422", status(422))
	mux.Handle("/425", status(425))
	mux.Handle("/429", status(429, "Retry-After", "7"))
	mux.Handle("/429-bare", status(429))
	mux.Handle("/500", status(500))
	mux.Handle("/503", status(503))
	mux.Handle("/503-retry", status(503, "Retry-After", "30"))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server notice the
		// client hanging up, which cancels r's context.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	loopback := newClient(t, deliver.ClientOptions{Guard: deliver.NewGuard(true, nil), ExcerptBytes: 64})
	guarded := newClient(t, deliver.ClientOptions{Guard: deliver.NewGuard(false, nil)})
	strict := newClient(t, deliver.ClientOptions{
		Guard:       deliver.NewGuard(true, nil),
		StrictGuard: deliver.NewGuard(false, nil).Because("the endpoint belongs to a tenant"),
	})
	httpsOnly := newClient(t, deliver.ClientOptions{Guard: deliver.NewGuard(true, nil), HTTPSOnly: true})

	tests := []struct {
		name       string
		c          *deliver.Client
		url        string
		strict     bool
		timeout    time.Duration
		class      destination.Class
		status     int
		retryAfter time.Duration
		reason     string // exact, or a prefix when it ends in "*"
		response   string
	}{
		{name: "200", url: "/200", class: destination.Success, status: 200},
		{name: "204", url: "/204", class: destination.Success, status: 204},
		{name: "302 not followed", url: "/302", class: destination.Permanent, status: 302, reason: "redirect not followed (HTTP 302)", response: "answer 302"},
		{name: "408", url: "/408", class: destination.Transient, status: 408, reason: "HTTP 408 Request Timeout", response: "answer 408"},
		{name: "410", url: "/410", class: destination.Gone, status: 410, reason: "HTTP 410 Gone", response: "answer 410"},
		{name: "422", url: "/422", class: destination.Permanent, status: 422, reason: "HTTP 422 Unprocessable Entity", response: "answer 422"},
		{name: "425", url: "/425", class: destination.Transient, status: 425, reason: "HTTP 425 Too Early", response: "answer 425"},
		{name: "429 with Retry-After", url: "/429", class: destination.RateLimited, status: 429, retryAfter: 7 * time.Second, reason: "HTTP 429 Too Many Requests (Retry-After 7s)", response: "answer 429"},
		{name: "429 without", url: "/429-bare", class: destination.RateLimited, status: 429, reason: "HTTP 429 Too Many Requests", response: "answer 429"},
		{name: "500", url: "/500", class: destination.Transient, status: 500, reason: "HTTP 500 Internal Server Error", response: "answer 500"},
		{name: "503", url: "/503", class: destination.Transient, status: 503, reason: "HTTP 503 Service Unavailable", response: "answer 503"},
		{name: "503 with Retry-After", url: "/503-retry", class: destination.RateLimited, status: 503, retryAfter: 30 * time.Second, reason: "HTTP 503 Service Unavailable (Retry-After 30s)", response: "answer 503"},
		{name: "timeout", url: "/slow", timeout: 100 * time.Millisecond, class: destination.Transient, reason: "timeout after 100ms"},
		{name: "guard refuses loopback", c: guarded, url: "/200", class: destination.Rejected, reason: "refused: 127.0.0.1 is a loopback address*"},
		{name: "strict guard for a tenant's endpoint", c: strict, url: "/200", strict: true, class: destination.Rejected, reason: "refused: 127.0.0.1 is a loopback address (the endpoint belongs to a tenant)*"},
		{name: "operator's guard otherwise", c: strict, url: "/200", class: destination.Success, status: 200},
		{name: "http while HTTPS is required", c: httpsOnly, url: "/200", class: destination.Rejected, reason: "refused: http:// URL while HTTPS is required"},
		{name: "invalid URL", url: "ftp://example.com/?token=hunter2", class: destination.Rejected, reason: "invalid endpoint URL: scheme must be http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			if c == nil {
				c = loopback
			}
			url := tt.url
			if strings.HasPrefix(url, "/") {
				url = srv.URL + url
			}
			d := open(c, destination.Endpoint{ID: "ep", URL: url, Timeout: tt.timeout, Strict: tt.strict})
			res := d.Send(t.Context(), destination.Request{EventID: "evt", Payload: []byte(`{}`)})
			if res.Class != tt.class || res.Status != tt.status || res.RetryAfter != tt.retryAfter {
				t.Fatalf("Send = %v status %d retry-after %v (%q), want %v status %d retry-after %v",
					res.Class, res.Status, res.RetryAfter, res.Reason, tt.class, tt.status, tt.retryAfter)
			}
			if want, ok := strings.CutSuffix(tt.reason, "*"); ok {
				if !strings.HasPrefix(res.Reason, want) {
					t.Errorf("Reason = %q, want it to start with %q", res.Reason, want)
				}
			} else if res.Reason != tt.reason {
				t.Errorf("Reason = %q, want %q", res.Reason, tt.reason)
			}
			if string(res.Response) != tt.response {
				t.Errorf("Response = %q, want %q", res.Response, tt.response)
			}
			if (res.Err != nil) != (tt.status == 0) {
				t.Errorf("Err = %v with status %d: want an error exactly when there was no answer", res.Err, res.Status)
			}
			if strings.Contains(res.Reason, "hunter2") {
				t.Errorf("Reason %q contains the URL's query", res.Reason)
			}
		})
	}
}

// TestWebhookCanceled checks that a canceled attempt is transient and says
// so, as the engine expects of a shutdown.
func TestWebhookCanceled(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(srv.Close)
	c := newClient(t, deliver.ClientOptions{Guard: deliver.NewGuard(true, nil)})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := open(c, destination.Endpoint{URL: srv.URL}).Send(ctx, destination.Request{EventID: "evt"})
	if res.Class != destination.Transient || !errors.Is(res.Err, context.Canceled) || res.Reason != "canceled" {
		t.Errorf("Send = %+v, want transient, canceled", res)
	}
}

// TestWebhookSendAllocs checks that going through the interface costs
// nothing over calling the client: the request travels by value, so it does
// not escape, and the result is copied, not boxed. Only the reason of a
// failed attempt is extra, and the engine asked for it after Do as well. A
// refused URL keeps the network (and its noise) out of the count.
func TestWebhookSendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items: allocation counts mean nothing")
	}
	c := newClient(t, deliver.ClientOptions{})
	signer := testSigner(t)
	header := http.Header{"X-Api-Key": {"k"}}
	const url = "ftp://example.com/hooks"
	payload := bytes.Repeat([]byte("x"), 500)
	ctx := context.Background()
	// Anything else running (the race detector, goroutines of earlier
	// tests winding down) only adds to a count: the least of a few is the
	// path's own.
	least := func(f func()) float64 {
		n := testing.AllocsPerRun(100, f)
		for range 4 {
			n = min(n, testing.AllocsPerRun(100, f))
		}
		return n
	}
	direct := least(func() {
		req := deliver.Request{URL: url, ID: "evt_1", Body: payload, Header: header, Signer: signer, OrderingKey: "k"}
		res := c.Do(ctx, &req)
		_ = res.Reason()
	})
	d := open(c, destination.Endpoint{URL: url, Header: header, Signer: signer})
	viaInterface := least(func() {
		_ = d.Send(ctx, destination.Request{EventID: "evt_1", Payload: payload, OrderingKey: "k"})
	})
	t.Logf("allocations: Send %v, Do and Reason %v", viaInterface, direct)
	if viaInterface != direct {
		t.Errorf("Send allocates %v times, Do and Reason %v", viaInterface, direct)
	}
}

// BenchmarkSend is BenchmarkDo through the destination interface.
func BenchmarkSend(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	c := newClient(b, deliver.ClientOptions{Guard: deliver.NewGuard(true, nil), UserAgent: "hookjet/test"})
	d := open(c, destination.Endpoint{
		URL:    srv.URL + "/hooks",
		Signer: deliver.NewSigner([]byte("0123456789abcdef0123456789abcdef")),
		Header: http.Header{"X-Api-Key": {"secret"}},
	})
	r := destination.Request{EventID: "msg_p5jXN8AQM9LWM0D4loKWxJek", Payload: bytes.Repeat([]byte("x"), 500)}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := d.Send(ctx, r); res.Class != destination.Success {
			b.Fatalf("Send = %+v", res)
		}
	}
}

package deliver

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// newTestClient returns a Client whose idle connections are closed when the
// test ends (so goleak sees no keep-alive goroutines).
func newTestClient(t testing.TB, opts ClientOptions) *Client {
	t.Helper()
	c := NewClient(opts)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// loopbackOptions allows delivering to httptest servers.
func loopbackOptions() ClientOptions {
	return ClientOptions{Guard: NewGuard(true, nil), UserAgent: "hookjet/test"}
}

// captured is what a recording receiver saw of one request.
type captured struct {
	method string
	header http.Header
	body   []byte
}

// recorder is an httptest receiver that records requests and answers with
// a scripted handler (200 when nil).
type recorder struct {
	mu   sync.Mutex
	reqs []captured
	hits atomic.Int64
	srv  *httptest.Server
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.hits.Add(1)
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("receiver: reading body: %v", err)
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, captured{method: r.Method, header: r.Header.Clone(), body: body})
		rec.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	t.Cleanup(rec.srv.Close)
	return rec
}

func (rec *recorder) last(t *testing.T) captured {
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.reqs) == 0 {
		t.Fatal("receiver saw no request")
	}
	return rec.reqs[len(rec.reqs)-1]
}

func TestClientRequest(t *testing.T) {
	rec := newRecorder(t, nil)
	keys := [][]byte{[]byte("old secret"), []byte("new secret")}
	body := []byte("{\"a\":1}\n\x00\xff trailing  ")

	tests := []struct {
		name        string
		req         Request
		contentType string
		signature   bool
		userAgent   string
		extra       map[string]string
	}{
		{
			name:        "signed with extra headers",
			req:         Request{ID: "evt_123", Body: body, Signer: NewSigner(keys...)},
			contentType: "application/json",
			signature:   true,
			userAgent:   "hookjet/test",
		},
		{
			name: "extra headers cannot override signature headers",
			req: Request{ID: "evt_456", Body: body, Signer: NewSigner(keys...), ContentType: "text/plain",
				Header: http.Header{
					"X-Api-Key":         {"k-123"},
					"X-Multi":           {"a", "b"},
					"Webhook-Id":        {"forged"},
					"Webhook-Signature": {"v1,forged"},
					"Webhook-Timestamp": {"1"},
					"Content-Type":      {"forged/type"},
					"User-Agent":        {"custom-agent"},
				}},
			contentType: "text/plain",
			signature:   true,
			userAgent:   "custom-agent",
			extra:       map[string]string{"X-Api-Key": "k-123", "X-Multi": "a,b"},
		},
		{
			name: "trace headers are sent and cannot override signature headers",
			req: Request{ID: "evt_trace", Body: body, Signer: NewSigner(keys...),
				Header: http.Header{"X-Api-Key": {"k-1"}},
				TraceHeader: http.Header{
					"Traceparent":       {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
					"Tracestate":        {"vendor=1"},
					"Webhook-Id":        {"forged"},
					"Content-Length":    {"1"},
					"Content-Type":      {"forged/type"},
					"Transfer-Encoding": {"chunked"},
				}},
			contentType: "application/json",
			signature:   true,
			userAgent:   "hookjet/test",
			extra: map[string]string{"X-Api-Key": "k-1", "Tracestate": "vendor=1",
				"Traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
		},
		{
			name: "the ordering key is sent, in place of an extra header of its name",
			req: Request{ID: "evt_key", Body: body, Signer: NewSigner(keys...), OrderingKey: "customer 7/ü",
				Header: http.Header{"X-Api-Key": {"k-2"}, "Hookjet-Ordering-Key": {"forged"}}},
			contentType: "application/json",
			signature:   true,
			userAgent:   "hookjet/test",
			extra:       map[string]string{"X-Api-Key": "k-2"},
		},
		{
			name:        "unsigned, empty body",
			req:         Request{ID: "evt_789"},
			contentType: "application/json",
			userAgent:   "hookjet/test",
		},
	}
	c := newTestClient(t, loopbackOptions())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.URL = rec.srv.URL + "/hooks?x=1"
			res := c.Do(t.Context(), &tt.req)
			if res.Class != Success || res.Status != 200 || res.Err != nil {
				t.Fatalf("Do = %+v, want success", res.Outcome)
			}
			got := rec.last(t)
			if got.method != http.MethodPost {
				t.Errorf("method = %s, want POST", got.method)
			}
			if !bytes.Equal(got.body, tt.req.Body) {
				t.Errorf("body = %q, want %q", got.body, tt.req.Body)
			}
			wantTS := strconv.FormatInt(res.Sent.Unix(), 10)
			single := map[string]string{
				"Webhook-Id":        tt.req.ID,
				"Webhook-Timestamp": wantTS,
				"Content-Type":      tt.contentType,
				"User-Agent":        tt.userAgent,
				"Content-Length":    strconv.Itoa(len(tt.req.Body)),
			}
			if tt.signature {
				single["Webhook-Signature"] = refSignAll(keys, tt.req.ID, res.Sent.Unix(), tt.req.Body)
			}
			if tt.req.OrderingKey != "" {
				single["Hookjet-Ordering-Key"] = tt.req.OrderingKey
			} else if v, ok := got.header["Hookjet-Ordering-Key"]; ok {
				t.Errorf("a request without an ordering key has Hookjet-Ordering-Key %q", v)
			}
			for k, want := range single {
				if v := got.header[k]; len(v) != 1 || v[0] != want {
					t.Errorf("header %s = %q, want exactly [%q]", k, v, want)
				}
			}
			if !tt.signature {
				if v, ok := got.header["Webhook-Signature"]; ok {
					t.Errorf("unsigned request has webhook-signature %q", v)
				}
			}
			for k, want := range tt.extra {
				if v := strings.Join(got.header[k], ","); v != want {
					t.Errorf("extra header %s = %q, want %q", k, v, want)
				}
			}
			for _, k := range []string{"Idempotency-Key", "Accept-Encoding"} {
				if v, ok := got.header[k]; ok {
					t.Errorf("unexpected header %s: %q", k, v)
				}
			}
			if res.Latency <= 0 {
				t.Errorf("Latency = %v, want > 0", res.Latency)
			}
		})
	}
}

func TestClientStatuses(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		retryAfter string
		want       Class
		wantWait   time.Duration
	}{
		{"200", 200, "", Success, 0},
		{"204", 204, "", Success, 0},
		{"400", 400, "", Permanent, 0},
		{"410", 410, "", Gone, 0},
		{"429", 429, "17", RateLimited, 17 * time.Second},
		{"500", 500, "", Transient, 0},
		{"503", 503, "", Transient, 0},
		{"503 Retry-After", 503, "60", RateLimited, time.Minute},
	}
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if ra := r.URL.Query().Get("retry_after"); ra != "" {
			w.Header().Set("Retry-After", ra)
		}
		code, err := strconv.Atoi(r.URL.Query().Get("status"))
		if err != nil {
			t.Errorf("bad status: %v", err)
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, "secret response body")
	})
	c := newTestClient(t, loopbackOptions())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := rec.srv.URL + "/?status=" + strconv.Itoa(tt.status) + "&retry_after=" + tt.retryAfter
			res := c.Do(t.Context(), &Request{URL: u, ID: "evt", Body: []byte("{}")})
			if res.Class != tt.want || res.Status != tt.status || res.RetryAfter != tt.wantWait {
				t.Errorf("Do = %+v, want class %v status %d retry-after %v", res.Outcome, tt.want, tt.status, tt.wantWait)
			}
			if strings.Contains(res.Reason(), "secret") {
				t.Errorf("Reason() = %q contains the response body", res.Reason())
			}
		})
	}
}

func TestClientRedirectNotFollowed(t *testing.T) {
	target := newRecorder(t, nil)
	redirect := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.srv.URL+"/stolen", http.StatusFound)
	})
	c := newTestClient(t, loopbackOptions())
	res := c.Do(t.Context(), &Request{URL: redirect.srv.URL, ID: "evt", Body: []byte("{}")})
	if res.Class != Permanent || res.Status != http.StatusFound {
		t.Errorf("Do = %+v, want permanent 302", res.Outcome)
	}
	if want := "redirect not followed (HTTP 302)"; res.Reason() != want {
		t.Errorf("Reason() = %q, want %q", res.Reason(), want)
	}
	if redirect.hits.Load() != 1 || target.hits.Load() != 0 {
		t.Errorf("redirecting receiver saw %d requests, target %d; want 1 and 0", redirect.hits.Load(), target.hits.Load())
	}
}

// TestClientGuard checks that the guard refuses at dial time, whether the
// private address is a literal or what a public-looking name resolves to,
// and that no request reaches the receiver.
func TestClientGuard(t *testing.T) {
	rec := newRecorder(t, nil)
	port := rec.srv.Listener.Addr().(*net.TCPAddr).Port
	resolver := newFakeResolver(t, map[string][]netip.Addr{
		"public.example":  {netip.MustParseAddr("127.0.0.1")},
		"private.example": {netip.MustParseAddr("10.0.0.5")},
	})
	tests := []struct {
		name   string
		host   string
		guard  *Guard
		want   Class
		reason string
		hits   int64
	}{
		{name: "name resolving to loopback", host: "public.example", guard: NewGuard(false, nil),
			want: Rejected, reason: "refused: 127.0.0.1 is a loopback address"},
		{name: "loopback literal", host: "127.0.0.1", guard: NewGuard(false, nil),
			want: Rejected, reason: "refused: 127.0.0.1 is a loopback address"},
		{name: "name resolving to a private address", host: "private.example", guard: NewGuard(false, nil),
			want: Rejected, reason: "refused: 10.0.0.5 is a private address"},
		{name: "allow-listed", host: "public.example",
			guard: NewGuard(false, []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}), want: Success, hits: 1},
		{name: "private networks allowed", host: "public.example", guard: NewGuard(true, nil), want: Success, hits: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := rec.hits.Load()
			c := newTestClient(t, ClientOptions{Guard: tt.guard, Resolver: resolver})
			u := "http://" + net.JoinHostPort(tt.host, strconv.Itoa(port)) + "/"
			res := c.Do(t.Context(), &Request{URL: u, ID: "evt", Body: []byte("{}")})
			if res.Class != tt.want {
				t.Fatalf("Do = %+v (%s), want %v", res.Outcome, res.Reason(), tt.want)
			}
			if tt.reason != "" && res.Reason() != tt.reason {
				t.Errorf("Reason() = %q, want %q", res.Reason(), tt.reason)
			}
			if tt.want == Rejected && !errors.Is(res.Err, ErrRefused) {
				t.Errorf("Err = %v, want ErrRefused", res.Err)
			}
			if got := rec.hits.Load() - before; got != tt.hits {
				t.Errorf("receiver saw %d requests, want %d", got, tt.hits)
			}
		})
	}
}

// TestClientResponseCap sends a 10 MB response body and then holds the
// response open: a client that read more than its cap would block until its
// timeout instead of succeeding.
func TestClientResponseCap(t *testing.T) {
	const size = 10 << 20
	var written atomic.Int64
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size+1))
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for written.Load() < size {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select { // never finish the body; wait for the client to hang up
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	for _, tt := range []struct {
		name    string
		max     int64
		wantMax int64
	}{
		{"default 64 KiB", 0, DefaultMaxResponseBytes},
		{"1 KiB", 1 << 10, 1 << 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := loopbackOptions()
			opts.MaxResponseBytes = tt.max
			c := newTestClient(t, opts)
			res := c.Do(t.Context(), &Request{URL: rec.srv.URL, ID: "evt", Timeout: 10 * time.Second})
			if res.Class != Success || res.Err != nil {
				t.Fatalf("Do = %+v (%s), want success after reading %d bytes", res.Outcome, res.Reason(), tt.wantMax)
			}
			if c.maxBody != tt.wantMax {
				t.Errorf("maxBody = %d, want %d", c.maxBody, tt.wantMax)
			}
		})
	}
}

// TestClientTimeout checks that a receiver that never sends headers, or
// never finishes its body, costs at most the request's timeout.
func TestClientTimeout(t *testing.T) {
	release := make(chan struct{})
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("headers") == "1" {
			w.WriteHeader(http.StatusOK)
			_, _ = io.WriteString(w, "partial")
			w.(http.Flusher).Flush()
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	t.Cleanup(func() { close(release) }) // runs before the server closes
	const timeout = 200 * time.Millisecond
	c := newTestClient(t, loopbackOptions())
	for _, tt := range []struct {
		name   string
		query  string
		status int
	}{
		{"no headers", "?headers=0", 0},
		{"body never finishes", "?headers=1", 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res := c.Do(t.Context(), &Request{URL: rec.srv.URL + tt.query, ID: "evt", Timeout: timeout})
			if res.Class != Transient || res.Status != tt.status {
				t.Fatalf("Do = %+v, want transient with status %d", res.Outcome, tt.status)
			}
			var te *TimeoutError
			if !errors.As(res.Err, &te) || te.After != timeout {
				t.Errorf("Err = %v, want a TimeoutError after %v", res.Err, timeout)
			}
			if want := "timeout after 200ms"; res.Reason() != want {
				t.Errorf("Reason() = %q, want %q", res.Reason(), want)
			}
			if res.Latency < timeout {
				t.Errorf("Latency = %v, shorter than the timeout %v", res.Latency, timeout)
			}
			if errors.Is(res.Err, context.Canceled) {
				t.Error("Err is context.Canceled for a timeout")
			}
		})
	}
}

func TestClientCanceled(t *testing.T) {
	rec := newRecorder(t, nil)
	c := newTestClient(t, loopbackOptions())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	res := c.Do(ctx, &Request{URL: rec.srv.URL, ID: "evt"})
	if res.Class != Transient || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("Do = %+v, want transient and canceled", res.Outcome)
	}
	var te *TimeoutError
	if errors.As(res.Err, &te) {
		t.Errorf("Err = %v, a cancellation is not a timeout", res.Err)
	}
}

// TestClientKeepAlive checks that sequential deliveries reuse one
// connection.
func TestClientKeepAlive(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			t.Error(err)
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	c := newTestClient(t, loopbackOptions())
	body := bytes.Repeat([]byte("b"), 500)
	signer := NewSigner([]byte("key"))
	for i := range 100 {
		res := c.Do(t.Context(), &Request{URL: srv.URL, ID: "evt_" + strconv.Itoa(i), Body: body, Signer: signer})
		if res.Class != Success {
			t.Fatalf("request %d: %+v", i, res.Outcome)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Errorf("100 sequential requests opened %d connections, want 1", n)
	}
}

func TestClientURLChecks(t *testing.T) {
	rec := newRecorder(t, nil)
	tlsSrv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	tlsSrv.Config.ErrorLog = log.New(testWriter{t}, "", 0) // the refused handshake is expected
	tlsSrv.StartTLS()
	t.Cleanup(tlsSrv.Close)
	tests := []struct {
		name      string
		httpsOnly bool
		url       string
		insecure  bool
		want      Class
		wantErr   error
		reason    string
	}{
		{name: "http refused when HTTPS only", httpsOnly: true, url: rec.srv.URL, want: Rejected, wantErr: ErrInsecureURL},
		{name: "http allowed", url: rec.srv.URL, want: Success},
		{name: "https with unverified certificate", httpsOnly: true, url: tlsSrv.URL, want: Permanent,
			reason: "TLS: x509: certificate signed by unknown authority"},
		{name: "https with verification off", httpsOnly: true, url: tlsSrv.URL, insecure: true, want: Success},
		{name: "plain HTTP server behind https", url: strings.Replace(rec.srv.URL, "http:", "https:", 1), want: Permanent,
			reason: "TLS: endpoint does not speak TLS"},
		{name: "bad scheme", url: "ftp://example.com/", want: Rejected, wantErr: ErrInvalidURL},
		{name: "no host", url: "http:///path", want: Rejected, wantErr: ErrInvalidURL},
		{name: "unparsable", url: "http://exa mple.com/?token=hunter2", want: Rejected, wantErr: ErrInvalidURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := loopbackOptions()
			opts.HTTPSOnly = tt.httpsOnly
			c := newTestClient(t, opts)
			before := rec.hits.Load()
			res := c.Do(t.Context(), &Request{URL: tt.url, ID: "evt", InsecureSkipVerify: tt.insecure})
			if res.Class != tt.want {
				t.Fatalf("Do = %+v (%s), want %v", res.Outcome, res.Reason(), tt.want)
			}
			if tt.wantErr != nil && !errors.Is(res.Err, tt.wantErr) {
				t.Errorf("Err = %v, want %v", res.Err, tt.wantErr)
			}
			if tt.reason != "" && res.Reason() != tt.reason {
				t.Errorf("Reason() = %q, want %q", res.Reason(), tt.reason)
			}
			if tt.want == Rejected && rec.hits.Load() != before {
				t.Error("a rejected request reached the receiver")
			}
			if res.Err != nil && strings.Contains(res.Err.Error(), "hunter2") {
				t.Errorf("Err %q contains the URL's query", res.Err)
			}
		})
	}
}

func TestClientConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	c := newTestClient(t, loopbackOptions())
	res := c.Do(t.Context(), &Request{URL: "http://" + addr + "/?token=hunter2", ID: "evt"})
	if res.Class != Transient || res.Reason() != "connection refused" {
		t.Errorf("Do = %+v (%s), want transient connection refused", res.Outcome, res.Reason())
	}
	if strings.Contains(res.Err.Error(), "hunter2") {
		t.Errorf("Err %q contains the URL's query", res.Err)
	}
}

func BenchmarkDo(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(srv.Close)
	c := newTestClient(b, loopbackOptions())
	req := &Request{
		URL:    srv.URL + "/hooks",
		ID:     "msg_p5jXN8AQM9LWM0D4loKWxJek",
		Body:   bytes.Repeat([]byte("x"), 500),
		Signer: NewSigner([]byte("0123456789abcdef0123456789abcdef")),
		Header: http.Header{"X-Api-Key": {"secret"}},
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if res := c.Do(ctx, req); res.Class != Success {
			b.Fatalf("Do = %+v", res.Outcome)
		}
	}
}

// testWriter sends a logger's output to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// TestNewRequestReplayable checks what lets net/http replay a delivery on a
// keep-alive connection the receiver closed just as it was reused: an
// Idempotency-Key entry that is present but empty (so not sent), and a
// GetBody that yields the same bytes.
func TestNewRequestReplayable(t *testing.T) {
	c := newTestClient(t, ClientOptions{})
	body := []byte(`{"a":1}`)
	for _, tt := range []struct {
		name   string
		header http.Header
		want   []string
	}{
		{"default", nil, []string{}},
		{"configured key kept", http.Header{"Idempotency-Key": {"k"}}, []string{"k"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, err := c.newRequest(t.Context(), &Request{URL: "https://example.com/", ID: "evt", Body: body, Header: tt.header}, 1)
			if err != nil {
				t.Fatal(err)
			}
			v, ok := req.Header["Idempotency-Key"]
			if !ok || v == nil || strings.Join(v, ",") != strings.Join(tt.want, ",") || len(v) != len(tt.want) {
				t.Errorf("Idempotency-Key = %#v (present %v), want %#v", v, ok, tt.want)
			}
			for range 2 {
				rc, err := req.GetBody()
				if err != nil {
					t.Fatal(err)
				}
				got, err := io.ReadAll(rc)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, body) {
					t.Errorf("GetBody yields %q, want %q", got, body)
				}
			}
		})
	}
}

// TestClientConnectionDropped checks a receiver that hangs up without
// answering, gracefully or with a reset.
func TestClientConnectionDropped(t *testing.T) {
	for _, tt := range []struct {
		name   string
		reset  bool
		reason string
	}{
		{"closed", false, "connection closed before the response was complete"},
		{"reset", true, "connection reset"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				if tt.reset {
					if err := conn.(*net.TCPConn).SetLinger(0); err != nil {
						t.Error(err)
					}
				}
				if err := conn.Close(); err != nil {
					t.Error(err)
				}
			})
			c := newTestClient(t, loopbackOptions())
			res := c.Do(t.Context(), &Request{URL: rec.srv.URL, ID: "evt", Body: []byte("{}")})
			if res.Class != Transient || res.Status != 0 || res.Reason() != tt.reason {
				t.Errorf("Do = %+v (%s), want transient %q", res.Outcome, res.Reason(), tt.reason)
			}
		})
	}
}

// TestClientResponseExcerpt checks that the start of a non-2xx body is kept,
// cut at ExcerptBytes, and that a 2xx body or a client without an excerpt
// keeps nothing.
func TestClientResponseExcerpt(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.WriteHeader(status)
		_, _ = io.WriteString(w, r.URL.Query().Get("body"))
	})
	for _, tt := range []struct {
		name    string
		excerpt int
		status  int
		body    string
		want    string
	}{
		{"400 short body kept whole", 16, 400, "bad field x", "bad field x"},
		{"503 long body cut", 8, 503, "unavailable: try later", "unavailab"[:8]},
		{"empty body", 16, 500, "", ""},
		{"2xx body not kept", 16, 200, "ok thanks", ""},
		{"no excerpt asked", 0, 400, "bad field x", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts := loopbackOptions()
			opts.ExcerptBytes = tt.excerpt
			c := newTestClient(t, opts)
			url := rec.srv.URL + "?status=" + strconv.Itoa(tt.status) + "&body=" + strings.ReplaceAll(tt.body, " ", "+")
			res := c.Do(t.Context(), &Request{URL: url, ID: "evt", Timeout: 10 * time.Second})
			if res.Status != tt.status {
				t.Fatalf("status = %d (%s), want %d", res.Status, res.Reason(), tt.status)
			}
			if string(res.Response) != tt.want {
				t.Errorf("Response = %q, want %q", res.Response, tt.want)
			}
		})
	}
}

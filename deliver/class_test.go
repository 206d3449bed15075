package deliver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"
)

func TestClassString(t *testing.T) {
	tests := []struct {
		c    Class
		want string
	}{
		{Success, "success"},
		{Transient, "transient"},
		{RateLimited, "rate_limited"},
		{Permanent, "permanent"},
		{Gone, "gone"},
		{Rejected, "rejected"},
		{Class(42), "Class(42)"},
		{Class(-1), "Class(-1)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			if got := tt.c.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// response returns a response with status code and optional Retry-After.
func response(code int, retryAfter string) *http.Response {
	h := make(http.Header)
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{StatusCode: code, Header: h}
}

// timeoutErr is a net.Error that timed out.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestClassify(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	refused := NewGuard(false, nil).Check(netip.MustParseAddr("10.0.0.5"))
	opErr := func(errno error) error {
		return &url.Error{Op: "Post", URL: "https://x.example/?token=secret", Err: &net.OpError{
			Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", errno),
		}}
	}
	tests := []struct {
		name       string
		resp       *http.Response
		err        error
		want       Class
		retryAfter time.Duration
		reason     string
	}{
		// Statuses.
		{name: "200", resp: response(200, ""), want: Success, reason: "HTTP 200 OK"},
		{name: "201", resp: response(201, ""), want: Success, reason: "HTTP 201 Created"},
		{name: "204", resp: response(204, ""), want: Success, reason: "HTTP 204 No Content"},
		{name: "299", resp: response(299, ""), want: Success, reason: "HTTP 299"},
		{name: "101", resp: response(101, ""), want: Permanent, reason: "HTTP 101 Switching Protocols"},
		{name: "301", resp: response(301, ""), want: Permanent, reason: "redirect not followed (HTTP 301)"},
		{name: "302", resp: response(302, ""), want: Permanent, reason: "redirect not followed (HTTP 302)"},
		{name: "304", resp: response(304, ""), want: Permanent, reason: "redirect not followed (HTTP 304)"},
		{name: "307", resp: response(307, ""), want: Permanent, reason: "redirect not followed (HTTP 307)"},
		{name: "400", resp: response(400, ""), want: Permanent, reason: "HTTP 400 Bad Request"},
		{name: "401", resp: response(401, ""), want: Permanent, reason: "HTTP 401 Unauthorized"},
		{name: "404", resp: response(404, ""), want: Permanent, reason: "HTTP 404 Not Found"},
		{name: "408", resp: response(408, ""), want: Transient, reason: "HTTP 408 Request Timeout"},
		{name: "410", resp: response(410, ""), want: Gone, reason: "HTTP 410 Gone"},
		{name: "422", resp: response(422, ""), want: Permanent, reason: "HTTP 422 Unprocessable Entity"},
		{name: "425", resp: response(425, ""), want: Transient, reason: "HTTP 425 Too Early"},
		{name: "429", resp: response(429, ""), want: RateLimited, reason: "HTTP 429 Too Many Requests"},
		{name: "429 with Retry-After", resp: response(429, "30"), want: RateLimited, retryAfter: 30 * time.Second,
			reason: "HTTP 429 Too Many Requests (Retry-After 30s)"},
		{name: "429 with HTTP-date", resp: response(429, now.Add(90*time.Second).Format(http.TimeFormat)),
			want: RateLimited, retryAfter: 90 * time.Second, reason: "HTTP 429 Too Many Requests (Retry-After 1m30s)"},
		{name: "429 with garbage Retry-After", resp: response(429, "soon"), want: RateLimited,
			reason: "HTTP 429 Too Many Requests"},
		{name: "499", resp: response(499, ""), want: Permanent, reason: "HTTP 499"},
		{name: "500", resp: response(500, ""), want: Transient, reason: "HTTP 500 Internal Server Error"},
		{name: "501", resp: response(501, ""), want: Transient, reason: "HTTP 501 Not Implemented"},
		{name: "502", resp: response(502, ""), want: Transient, reason: "HTTP 502 Bad Gateway"},
		{name: "503", resp: response(503, ""), want: Transient, reason: "HTTP 503 Service Unavailable"},
		{name: "503 with Retry-After", resp: response(503, "120"), want: RateLimited, retryAfter: 2 * time.Minute,
			reason: "HTTP 503 Service Unavailable (Retry-After 2m0s)"},
		{name: "503 with past Retry-After", resp: response(503, "Fri, 31 Dec 1999 23:59:59 GMT"), want: RateLimited,
			reason: "HTTP 503 Service Unavailable"},
		{name: "503 with garbage Retry-After", resp: response(503, "-1"), want: Transient,
			reason: "HTTP 503 Service Unavailable"},
		{name: "500 with Retry-After", resp: response(500, "7"), want: Transient, retryAfter: 7 * time.Second,
			reason: "HTTP 500 Internal Server Error (Retry-After 7s)"},
		{name: "504", resp: response(504, ""), want: Transient, reason: "HTTP 504 Gateway Timeout"},
		{name: "505", resp: response(505, ""), want: Transient, reason: "HTTP 505 HTTP Version Not Supported"},
		{name: "599", resp: response(599, ""), want: Transient, reason: "HTTP 599"},
		{name: "600", resp: response(600, ""), want: Permanent, reason: "HTTP 600"},
		{name: "no response, no error", want: Transient, reason: "no response"},

		// Errors.
		{name: "context deadline", err: context.DeadlineExceeded, want: Transient, reason: "timeout"},
		{name: "wrapped url.Error timeout",
			err:  &url.Error{Op: "Post", URL: "https://x.example/", Err: fmt.Errorf("reading: %w", timeoutErr{})},
			want: Transient, reason: "timeout"},
		{name: "request timeout", err: &TimeoutError{After: 15 * time.Second, Err: context.DeadlineExceeded},
			want: Transient, reason: "timeout after 15s"},
		{name: "timeout while reading a 200's body",
			resp: response(200, ""), err: &TimeoutError{After: time.Second, Err: context.DeadlineExceeded},
			want: Transient, reason: "timeout after 1s"},
		{name: "canceled", err: &url.Error{Op: "Post", URL: "u", Err: context.Canceled}, want: Transient, reason: "canceled"},
		{name: "ECONNREFUSED", err: opErr(syscall.ECONNREFUSED), want: Transient, reason: "connection refused"},
		{name: "ECONNRESET", err: opErr(syscall.ECONNRESET), want: Transient, reason: "connection reset"},
		{name: "other errno", err: opErr(syscall.EHOSTUNREACH), want: Transient,
			reason: "dial tcp: connect: no route to host"},
		{name: "DNS not found",
			err: &url.Error{Op: "Post", URL: "u", Err: &net.OpError{Op: "dial", Net: "tcp",
				Err: &net.DNSError{Err: "no such host", Name: "nx.example", IsNotFound: true}}},
			want: Transient, reason: "DNS: no such host nx.example"},
		{name: "DNS server failure",
			err:  &net.DNSError{Err: "server misbehaving", Name: "x.example", IsTemporary: true},
			want: Transient, reason: "DNS: lookup x.example failed: server misbehaving"},
		{name: "EOF", err: &url.Error{Op: "Post", URL: "u", Err: io.EOF}, want: Transient,
			reason: "connection closed before the response was complete"},
		{name: "unexpected EOF", err: io.ErrUnexpectedEOF, want: Transient,
			reason: "connection closed before the response was complete"},
		{name: "guard refusal", err: &url.Error{Op: "Post", URL: "u", Err: &net.OpError{Op: "dial", Net: "tcp", Err: refused}},
			want: Rejected, reason: "refused: 10.0.0.5 is a private address"},
		{name: "insecure URL", err: ErrInsecureURL, want: Rejected,
			reason: "refused: http:// URL while HTTPS is required"},
		{name: "invalid URL", err: fmt.Errorf("%w: no host", ErrInvalidURL), want: Rejected,
			reason: "invalid endpoint URL: no host"},
		{name: "x509 unknown authority",
			err:  &url.Error{Op: "Post", URL: "u", Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}},
			want: Permanent, reason: "TLS: x509: certificate signed by unknown authority"},
		{name: "x509 hostname",
			err:  &url.Error{Op: "Post", URL: "u", Err: x509.HostnameError{Certificate: &x509.Certificate{}, Host: "x.example"}},
			want: Permanent, reason: "TLS: x509: certificate is not valid for any names, but wanted to match x.example"},
		{name: "x509 expired",
			err:  x509.CertificateInvalidError{Cert: &x509.Certificate{}, Reason: x509.Expired},
			want: Permanent},
		{name: "not TLS", err: &url.Error{Op: "Post", URL: "u", Err: tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}},
			want: Permanent, reason: "TLS: endpoint does not speak TLS"},
		{name: "unknown error", err: errors.New("something odd"), want: Transient, reason: "something odd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := Classify(tt.resp, tt.err, now)
			if o.Class != tt.want {
				t.Errorf("Class = %v, want %v", o.Class, tt.want)
			}
			wantStatus := 0
			if tt.resp != nil {
				wantStatus = tt.resp.StatusCode
			}
			if o.Status != wantStatus {
				t.Errorf("Status = %d, want %d", o.Status, wantStatus)
			}
			if o.RetryAfter != tt.retryAfter {
				t.Errorf("RetryAfter = %v, want %v", o.RetryAfter, tt.retryAfter)
			}
			if !errors.Is(o.Err, tt.err) {
				t.Errorf("Err = %v, want %v", o.Err, tt.err)
			}
			if tt.reason != "" && o.Reason() != tt.reason {
				t.Errorf("Reason() = %q, want %q", o.Reason(), tt.reason)
			}
		})
	}
}

// TestReasonHidesURL checks that a URL's query (which may carry a token)
// never reaches a reason.
func TestReasonHidesURL(t *testing.T) {
	err := &url.Error{Op: "Post", URL: "https://x.example/?token=hunter2", Err: errors.New("boom")}
	if r := Classify(nil, err, time.Time{}).Reason(); r != "boom" {
		t.Errorf("Reason() = %q, want %q", r, "boom")
	}
}

func BenchmarkClassify(b *testing.B) {
	now := time.Now()
	cases := []struct {
		name string
		resp *http.Response
		err  error
	}{
		{"200", response(200, ""), nil},
		{"429 Retry-After", response(429, "30"), nil},
		{"timeout", nil, &url.Error{Op: "Post", URL: "u", Err: timeoutErr{}}},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				Classify(c.resp, c.err, now)
			}
		})
	}
}

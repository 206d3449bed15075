package deliver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/internal/proxytest"
	"github.com/hookjet/hookjet/reach"
)

// authClient returns a client that may reach loopback, closed after t.
func authClient(t *testing.T, opts ClientOptions) *Client {
	t.Helper()
	if opts.Guard == nil {
		opts.Guard = NewGuard(true, nil)
	}
	c := NewClient(opts)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// sendOne makes one attempt of an order.created event to ep.
func sendOne(t *testing.T, c *Client, ep destination.Endpoint) destination.Result {
	t.Helper()
	return c.Open(ep).Send(t.Context(), destination.Request{EventID: "evt_1", EventType: "order.created", Payload: []byte(`{}`)})
}

// TestAuthBasicAndBearer sends to receivers that require basic and bearer
// authentication; the auth's Authorization replaces a static one, and a
// static header cannot forge Hookjet-Event-Type or Hookjet-Tenant.
func TestAuthBasicAndBearer(t *testing.T) {
	type seen struct {
		user, pass, authz, typ, tenant string
		basicOK                        bool
	}
	got := make(chan seen, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		got <- seen{u, p, r.Header.Get("Authorization"), r.Header.Get("Hookjet-Event-Type"), strings.Join(r.Header.Values("Hookjet-Tenant"), ","), ok}
		switch {
		case ok && u == "hookjet" && p == "s3cret:pw":
		case r.Header.Get("Authorization") == "Bearer tok-123":
		default:
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	c := authClient(t, ClientOptions{})
	forged := http.Header{"Authorization": {"Bearer static"}, "Hookjet-Event-Type": {"forged"}, "Hookjet-Tenant": {"forged"}}

	res := sendOne(t, c, destination.Endpoint{ID: "b", URL: srv.URL, Header: forged, Auth: reach.Auth{Type: reach.Basic, Username: "hookjet", Password: "s3cret:pw"}})
	if res.Class != Success {
		t.Fatalf("basic: %+v, want success", res)
	}
	if s := <-got; !s.basicOK || s.user != "hookjet" || s.pass != "s3cret:pw" || s.typ != "order.created" || s.tenant != "" {
		t.Errorf("basic: receiver saw %+v", s)
	}

	res = sendOne(t, c, destination.Endpoint{ID: "t", URL: srv.URL, Header: forged, Auth: reach.Auth{Type: reach.Bearer, Token: "tok-123"}})
	if res.Class != Success {
		t.Fatalf("bearer: %+v, want success", res)
	}
	if s := <-got; s.authz != "Bearer tok-123" || s.typ != "order.created" {
		t.Errorf("bearer: receiver saw %+v", s)
	}

	res = sendOne(t, c, destination.Endpoint{ID: "n", URL: srv.URL, Auth: reach.Auth{Type: reach.Bearer, Token: "wrong"}})
	if res.Class != Permanent || res.Status != http.StatusUnauthorized || res.Unsent {
		t.Errorf("a refused static bearer token: %+v, want permanent 401, sent once", res)
	}
	<-got
	select {
	case s := <-got:
		t.Errorf("a static token was sent twice (%+v): only OAuth2 tokens are fetched again", s)
	default:
	}
}

// tokenServer is an OAuth2 token endpoint.
type tokenServer struct {
	*httptest.Server
	fetches atomic.Int32
	// answer, when set, answers instead of issuing a token.
	answer atomic.Pointer[func(w http.ResponseWriter)]
	mu     sync.Mutex
	form   url.Values
}

func newTokenServer(t *testing.T, lifetime int) *tokenServer {
	ts := &tokenServer{}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := ts.fetches.Add(1)
		if f := ts.answer.Load(); f != nil {
			(*f)(w)
			return
		}
		id, secret, ok := r.BasicAuth()
		_ = r.ParseForm()
		ts.mu.Lock()
		ts.form = r.PostForm
		ts.mu.Unlock()
		if !ok || id != "client-1" || secret != "csecret-xyz" || r.PostForm.Get("grant_type") != "client_credentials" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"client authentication failed"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"access_token": "tok-" + strconv.Itoa(int(n)), "token_type": "Bearer", "expires_in": lifetime})
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *tokenServer) set(f func(w http.ResponseWriter)) { ts.answer.Store(&f) }

func oauth(tokenURL string) reach.Auth {
	return reach.Auth{Type: reach.OAuth2, TokenURL: tokenURL, ClientID: "client-1", ClientSecret: "csecret-xyz", Scopes: []string{"hooks.write"}, Audience: "https://api.example"}
}

// TestAuthOAuth2Token: a token is fetched once and shared, fetched again
// min(10s, a tenth of its lifetime) before it expires, and fetched again
// once when a receiver answers 401.
func TestAuthOAuth2Token(t *testing.T) {
	ts := newTokenServer(t, 60)
	var accept atomic.Pointer[string] // the token the receiver takes
	var calls atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if want := accept.Load(); want == nil || r.Header.Get("Authorization") != "Bearer "+*want {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	acceptTok := func(s string) { accept.Store(&s) }

	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	advance := func(d time.Duration) { now.Add(int64(d)) }
	c := authClient(t, ClientOptions{Clock: clock})
	ep := destination.Endpoint{ID: "o", URL: rcv.URL, Auth: oauth(ts.URL)}

	acceptTok("tok-1")
	for i := range 3 {
		if res := sendOne(t, c, ep); res.Class != Success {
			t.Fatalf("send %d: %+v", i, res)
		}
	}
	// A reopened endpoint (its settings rebuilt) keeps its token.
	if res := sendOne(t, c, ep); res.Class != Success {
		t.Fatalf("after reopening: %+v", res)
	}
	if n := ts.fetches.Load(); n != 1 {
		t.Fatalf("token fetched %d times for 4 deliveries, want 1 (cached)", n)
	}
	ts.mu.Lock()
	form := ts.form
	ts.mu.Unlock()
	if form.Get("scope") != "hooks.write" || form.Get("audience") != "https://api.example" {
		t.Errorf("token request form = %v, want scope and audience", form)
	}

	// 60s of lifetime: fetched again 6s before it expires, not sooner.
	advance(53 * time.Second)
	if res := sendOne(t, c, ep); res.Class != Success || ts.fetches.Load() != 1 {
		t.Fatalf("at 53s: %+v, %d fetches: want the cached token", res, ts.fetches.Load())
	}
	advance(2 * time.Second)
	acceptTok("tok-2")
	if res := sendOne(t, c, ep); res.Class != Success || ts.fetches.Load() != 2 {
		t.Fatalf("at 55s: %+v, %d fetches: want a new token", res, ts.fetches.Load())
	}

	// The receiver refuses the token: it is dropped, and one more request
	// goes with a new one.
	acceptTok("tok-3")
	before := calls.Load()
	if res := sendOne(t, c, ep); res.Class != Success || ts.fetches.Load() != 3 || calls.Load()-before != 2 {
		t.Fatalf("after a 401: %+v, %d fetches, %d requests: want success with a third token on the second request", res, ts.fetches.Load(), calls.Load()-before)
	}
	// Refused again with the new token: the 401 stands, after one retry.
	acceptTok("never")
	before = calls.Load()
	res := sendOne(t, c, ep)
	if res.Class != Permanent || res.Status != http.StatusUnauthorized || calls.Load()-before != 2 || ts.fetches.Load() != 4 {
		t.Fatalf("a receiver refusing every token: %+v, %d requests, %d fetches: want permanent 401 after one retry", res, calls.Load()-before, ts.fetches.Load())
	}
}

// TestAuthOAuth2TokenLongLifetime: an hour's token is fetched again 10s
// before it expires.
func TestAuthOAuth2TokenLongLifetime(t *testing.T) {
	ts := newTokenServer(t, 3600)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	t.Cleanup(rcv.Close)
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	c := authClient(t, ClientOptions{Clock: func() time.Time { return time.Unix(0, now.Load()) }})
	ep := destination.Endpoint{ID: "o", URL: rcv.URL, Auth: oauth(ts.URL)}
	sendOne(t, c, ep)
	now.Add(int64(3589 * time.Second))
	sendOne(t, c, ep)
	if n := ts.fetches.Load(); n != 1 {
		t.Fatalf("%d fetches 11s before expiry, want 1", n)
	}
	now.Add(int64(2 * time.Second))
	sendOne(t, c, ep)
	if n := ts.fetches.Load(); n != 2 {
		t.Fatalf("%d fetches 9s before expiry, want 2", n)
	}
}

// TestAuthOAuth2TokenEndpointFails classifies the token endpoint's
// answers: refusals are auth (dead-lettered with its error, never the
// secret), 429, 5xx and unreachable are transient, and neither is sent.
func TestAuthOAuth2TokenEndpointFails(t *testing.T) {
	var hits atomic.Int32
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(rcv.Close)
	redirected := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		t.Error("the token endpoint's redirect was followed")
	}))
	t.Cleanup(redirected.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()

	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter)
		url    string
		want   Class
		reason []string
	}{
		{"wrong secret", nil, "", Auth, []string{"HTTP 401", "invalid_client", "client authentication failed"}},
		{"400", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"error":"invalid_scope"}`)
		}, "", Auth, []string{"HTTP 400", "invalid_scope"}},
		{"403", func(w http.ResponseWriter) { w.WriteHeader(http.StatusForbidden) }, "", Auth, []string{"HTTP 403"}},
		{"redirect", func(w http.ResponseWriter) {
			w.Header().Set("Location", redirected.URL)
			w.WriteHeader(http.StatusFound)
		}, "", Auth, []string{"HTTP 302"}},
		{"no token", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"token_type":"Bearer"}`)
		}, "", Auth, []string{"no access token"}},
		{"429", func(w http.ResponseWriter) { w.WriteHeader(http.StatusTooManyRequests) }, "", Transient, []string{"HTTP 429"}},
		{"503", func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) }, "", Transient, []string{"HTTP 503"}},
		{"unreachable", nil, closed.URL, Transient, []string{"token endpoint: connection refused"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts := newTokenServer(t, 60)
			if tt.answer != nil {
				ts.set(tt.answer)
			}
			a := oauth(ts.URL)
			if tt.url != "" {
				a.TokenURL = tt.url
			}
			if tt.name == "wrong secret" {
				a.ClientSecret = "wrong-secret-777"
			}
			before := hits.Load()
			res := sendOne(t, authClient(t, ClientOptions{}), destination.Endpoint{ID: "o", URL: rcv.URL, Auth: a})
			if res.Class != tt.want || !res.Unsent {
				t.Errorf("class %v, unsent %v (%+v), want %v, unsent", res.Class, res.Unsent, res, tt.want)
			}
			for _, w := range tt.reason {
				if !strings.Contains(res.Reason, w) {
					t.Errorf("reason %q lacks %q", res.Reason, w)
				}
			}
			if strings.Contains(res.Reason, a.ClientSecret) || strings.Contains(res.Reason, "csecret") {
				t.Errorf("reason %q holds the client secret", res.Reason)
			}
			if hits.Load() != before {
				t.Error("the receiver was called without a token")
			}
		})
	}
}

// TestAuthOAuth2TokenEndpointGuarded: the token endpoint is reached
// through the SSRF guard.
func TestAuthOAuth2TokenEndpointGuarded(t *testing.T) {
	ts := newTokenServer(t, 60)
	c := authClient(t, ClientOptions{Guard: NewGuard(false, nil), Resolver: newFakeResolver(t, map[string][]netip.Addr{
		"hooks.example": {netip.MustParseAddr("93.184.215.14")},
	})})
	res := sendOne(t, c, destination.Endpoint{ID: "o", URL: "https://hooks.example/", Auth: oauth(ts.URL)})
	if res.Class != Rejected || !strings.Contains(res.Reason, "token endpoint: refused: 127.0.0.1 is a loopback address") {
		t.Fatalf("%+v, want rejected: the token endpoint is on loopback", res)
	}
	if ts.fetches.Load() != 0 {
		t.Error("the guard let the token request through")
	}
}

// testCert makes a certificate signed by ca (self-signed when ca is nil).
func testCert(t *testing.T, cn string, ca *tls.Certificate, isCA bool) (tls.Certificate, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: cn},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		IsCA:                  isCA,
		BasicConstraintsValid: true,
	}
	parent, signer := tmpl, any(key)
	if ca != nil {
		parent, signer = ca.Leaf, ca.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return c, certPEM, keyPEM
}

// TestAuthMTLS delivers to an HTTPS receiver that requires a client
// certificate from its CA.
func TestAuthMTLS(t *testing.T) {
	ca, _, _ := testCert(t, "test CA", nil, true)
	_, certPEM, keyPEM := testCert(t, "hookjet-client", &ca, false)
	_, otherPEM, otherKey := testCert(t, "stranger", nil, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)
	seen := make(chan string, 1)
	rcv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen <- r.TLS.PeerCertificates[0].Subject.CommonName
		w.WriteHeader(http.StatusNoContent)
	}))
	rcv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12}
	rcv.StartTLS()
	t.Cleanup(rcv.Close)
	c := authClient(t, ClientOptions{})
	ep := destination.Endpoint{ID: "m", URL: rcv.URL, InsecureSkipVerify: true} // the receiver's certificate is httptest's

	if res := sendOne(t, c, ep); res.Class == Success {
		t.Fatalf("without a client certificate: %+v, want a failure", res)
	}
	ep.Auth = reach.Auth{Type: reach.MTLS, Cert: string(otherPEM), Key: string(otherKey)}
	if res := sendOne(t, c, ep); res.Class == Success {
		t.Fatalf("with a certificate of another CA: %+v, want a failure", res)
	}
	ep.Auth = reach.Auth{Type: reach.MTLS, Cert: string(certPEM), Key: string(keyPEM)}
	res := sendOne(t, c, ep)
	if res.Class != Success {
		t.Fatalf("with the client certificate: %+v, want success", res)
	}
	if cn := <-seen; cn != "hookjet-client" {
		t.Errorf("the receiver saw %q, want hookjet-client", cn)
	}
	// An endpoint without a certificate to the same host gets no
	// connection the certificate opened.
	ep.Auth = reach.Auth{}
	if res := sendOne(t, c, ep); res.Class == Success {
		t.Fatalf("after an mTLS delivery, without a certificate: %+v, want a failure", res)
	}
}

// TestEgressProxy delivers through tinyproxy: https is tunnelled by
// CONNECT to the address the guard checked (Host and SNI keep the name),
// http goes in absolute form to it, the guard still refuses a private
// target, an endpoint may go without the proxy, and an OAuth2 token is
// fetched through it too.
func TestEgressProxy(t *testing.T) {
	px := proxytest.Start(t)
	type seen struct{ host, sni, authz string }
	got := make(chan seen, 8)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := seen{host: r.Host, authz: r.Header.Get("Authorization")}
		if r.TLS != nil {
			s.sni = r.TLS.ServerName
		}
		got <- s
		w.WriteHeader(http.StatusNoContent)
	})
	tlsRcv := httptest.NewTLSServer(handler)
	t.Cleanup(tlsRcv.Close)
	plainRcv := httptest.NewServer(handler)
	t.Cleanup(plainRcv.Close)
	ts := newTokenServer(t, 60)
	_, tlsPort, _ := net.SplitHostPort(tlsRcv.Listener.Addr().String())
	_, plainPort, _ := net.SplitHostPort(plainRcv.Listener.Addr().String())
	_, tokenPort, _ := net.SplitHostPort(ts.Listener.Addr().String())
	resolver := newFakeResolver(t, map[string][]netip.Addr{"receiver.test": {netip.MustParseAddr("127.0.0.1")}})

	c := authClient(t, ClientOptions{EgressProxy: px.URL, Resolver: resolver})
	res := sendOne(t, c, destination.Endpoint{ID: "s", URL: "https://receiver.test:" + tlsPort + "/hooks", InsecureSkipVerify: true})
	if res.Class != Success {
		t.Fatalf("https through the proxy: %+v", res)
	}
	if s := <-got; s.host != "receiver.test:"+tlsPort || s.sni != "receiver.test" {
		t.Errorf("https through the proxy: the receiver saw Host %q, SNI %q; want the name", s.host, s.sni)
	}
	if log := px.Log(); !strings.Contains(log, "CONNECT 127.0.0.1:"+tlsPort) || strings.Contains(log, "receiver.test") {
		t.Errorf("the proxy was not asked for the checked address alone:\n%s", log)
	}

	res = sendOne(t, c, destination.Endpoint{ID: "p", URL: "http://receiver.test:" + plainPort + "/hooks"})
	if res.Class != Success {
		t.Fatalf("http through the proxy: %+v", res)
	}
	<-got
	if log := px.Log(); !strings.Contains(log, "POST http://127.0.0.1:"+plainPort+"/hooks") {
		t.Errorf("the proxy was not asked for http://<checked address>:\n%s", log)
	}

	// OAuth2: the token comes through the proxy as well.
	res = sendOne(t, c, destination.Endpoint{ID: "o", URL: "https://receiver.test:" + tlsPort + "/hooks", InsecureSkipVerify: true, Auth: oauth(ts.URL)})
	if res.Class != Success || ts.fetches.Load() != 1 {
		t.Fatalf("OAuth2 through the proxy: %+v, %d fetches", res, ts.fetches.Load())
	}
	if s := <-got; s.authz != "Bearer tok-1" {
		t.Errorf("OAuth2 through the proxy: Authorization %q", s.authz)
	}
	if log := px.Log(); !strings.Contains(log, "POST http://127.0.0.1:"+tokenPort+"/") {
		t.Errorf("the token request did not go through the proxy:\n%s", log)
	}

	// An endpoint with proxy "none" goes direct.
	before := px.Log()
	res = sendOne(t, c, destination.Endpoint{ID: "d", URL: tlsRcv.URL, InsecureSkipVerify: true, Proxy: reach.None})
	if res.Class != Success {
		t.Fatalf("proxy none: %+v", res)
	}
	<-got
	if px.Log() != before {
		t.Errorf("proxy none went through the proxy:\n%s", strings.TrimPrefix(px.Log(), before))
	}

	// The guard judges the target before the proxy is asked: the proxy on
	// loopback is the operator's, the receiver on loopback is refused.
	strict := authClient(t, ClientOptions{EgressProxy: px.URL, Resolver: resolver, Guard: NewGuard(false, nil)})
	res = strict.Open(destination.Endpoint{ID: "x", URL: "https://receiver.test:" + tlsPort + "/hooks", InsecureSkipVerify: true}).
		Send(t.Context(), destination.Request{EventID: "evt_2", Payload: []byte(`{}`)})
	if res.Class != Rejected || !strings.Contains(res.Reason, "refused: 127.0.0.1 is a loopback address") {
		t.Fatalf("a private target through the proxy: %+v, want rejected", res)
	}
	res = strict.Open(destination.Endpoint{ID: "x", URL: "http://receiver.test:" + plainPort + "/hooks"}).
		Send(t.Context(), destination.Request{EventID: "evt_3", Payload: []byte(`{}`)})
	if res.Class != Rejected {
		t.Fatalf("a private http target through the proxy: %+v, want rejected", res)
	}
	select {
	case s := <-got:
		t.Errorf("a refused target was reached: %+v", s)
	default:
	}

	// An endpoint's own proxy that is not a URL is refused.
	res = sendOne(t, c, destination.Endpoint{ID: "b", URL: tlsRcv.URL, Proxy: "socks5://x:1"})
	if res.Class != Rejected || !strings.Contains(res.Reason, "invalid egress proxy") {
		t.Errorf("an invalid proxy: %+v, want rejected", res)
	}
}

// BenchmarkSendAuth compares an OAuth2 endpoint with a bearer one in the
// same run: the OAuth2 token is cached, so the two should cost the same
// (make bench; the issue asks >= 0.95 of bearer's rate).
func BenchmarkSendAuth(b *testing.B) {
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Header.Get("Authorization") == "" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(rcv.Close)
	var fetches atomic.Int32
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"tok","token_type":"Bearer","expires_in":3600}`)
	}))
	b.Cleanup(tokens.Close)
	c := NewClient(ClientOptions{Guard: NewGuard(true, nil)})
	b.Cleanup(c.CloseIdleConnections)
	for _, a := range []reach.Auth{
		{Type: reach.Bearer, Token: "tok"},
		{Type: reach.OAuth2, TokenURL: tokens.URL, ClientID: "c", ClientSecret: "s"},
	} {
		// Opened once: the benchmark's rounds share the endpoint's token.
		d := c.Open(destination.Endpoint{ID: a.Type, URL: rcv.URL, Auth: a, Signer: NewSigner([]byte("0123456789abcdef0123456789abcdef"))})
		b.Run(a.Type, func(b *testing.B) {
			r := destination.Request{EventID: "msg_1", EventType: "order.created", Payload: make([]byte, 500)}
			b.ReportAllocs()
			for b.Loop() {
				if res := d.Send(b.Context(), r); res.Class != Success {
					b.Fatalf("Send = %+v", res)
				}
			}
		})
	}
	if n := fetches.Load(); n > 1 {
		b.Fatalf("%d token fetches: want one (cached)", n)
	}
}

// BenchmarkSendProxy compares a delivery through tinyproxy (https by
// CONNECT) with a direct one, in the same run (reported, no bound).
func BenchmarkSendProxy(b *testing.B) {
	px := proxytest.Start(b)
	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	b.Cleanup(rcv.Close)
	for _, tt := range []struct{ name, proxy string }{{"direct", reach.None}, {"tinyproxy", px.URL.String()}} {
		b.Run(tt.name, func(b *testing.B) {
			c := NewClient(ClientOptions{Guard: NewGuard(true, nil)})
			b.Cleanup(c.CloseIdleConnections)
			d := c.Open(destination.Endpoint{ID: tt.name, URL: rcv.URL, Proxy: tt.proxy, InsecureSkipVerify: true})
			r := destination.Request{EventID: "msg_1", EventType: "order.created", Payload: make([]byte, 500)}
			b.ReportAllocs()
			for b.Loop() {
				if res := d.Send(b.Context(), r); res.Class != Success {
					b.Fatalf("Send = %+v", res)
				}
			}
		})
	}
}

// TestAuthOAuth2TokenShared: deliveries that start together wait for one
// fetch rather than each fetching a token.
func TestAuthOAuth2TokenShared(t *testing.T) {
	ts := newTokenServer(t, 60)
	release := make(chan struct{})
	ts.set(func(w http.ResponseWriter) {
		<-release
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":60}`)
	})
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(rcv.Close)
	c := authClient(t, ClientOptions{})
	d := c.Open(destination.Endpoint{ID: "o", URL: rcv.URL, Auth: oauth(ts.URL)})
	var wg sync.WaitGroup
	results := make(chan destination.Result, 20)
	for range 20 {
		wg.Go(func() {
			results <- d.Send(t.Context(), destination.Request{EventID: "evt", Payload: []byte(`{}`)})
		})
	}
	for ts.fetches.Load() == 0 {
		time.Sleep(time.Millisecond) // the first fetch is under way
	}
	close(release)
	wg.Wait()
	close(results)
	for res := range results {
		if res.Class != Success {
			t.Errorf("%+v", res)
		}
	}
	if n := ts.fetches.Load(); n != 1 {
		t.Errorf("%d fetches for 20 deliveries started together, want 1", n)
	}
}

// TestEgressProxyCredentials: a proxy URL's user:password becomes
// Proxy-Authorization; a proxy refusing the CONNECT is a permanent failure
// that names it.
func TestEgressProxyCredentials(t *testing.T) {
	px := proxytest.Start(t, "BasicAuth hookjet pr0xy-pw")
	rcv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(rcv.Close)
	c := authClient(t, ClientOptions{})
	with := *px.URL
	with.User = url.UserPassword("hookjet", "pr0xy-pw")
	if res := sendOne(t, c, destination.Endpoint{ID: "a", URL: rcv.URL, InsecureSkipVerify: true, Proxy: with.String()}); res.Class != Success {
		t.Fatalf("with the proxy's credentials: %+v", res)
	}
	res := sendOne(t, c, destination.Endpoint{ID: "b", URL: rcv.URL, InsecureSkipVerify: true, Proxy: px.URL.String()})
	if res.Class != Permanent || !strings.Contains(res.Reason, "egress proxy answered CONNECT with HTTP 407") {
		t.Fatalf("without them: %+v, want permanent naming the proxy's 407", res)
	}
	if strings.Contains(res.Reason, "pr0xy-pw") {
		t.Errorf("reason %q shows the proxy's password", res.Reason)
	}
}

package inbound

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookjet/hookjet/config"
)

// Bodies are buffered before their signature can be checked, so senders
// that trickle large bodies could make the gateway hold any amount of
// memory. Past the body budget a request is answered 503 with Retry-After
// at once; when a held body is released the next request gets through.
func TestInboundBodyBudgetAnswers503WhenFull(t *testing.T) {
	const maxBody = 1 << 10
	cfg := config.Inbound{MaxBodyBytes: maxBody, Sources: []config.InboundSource{{ID: "gh", Scheme: config.SchemeGitHub, Secrets: []config.Secret{config.NewSecret("gh-secret")}}}}
	g, err := New(cfg, nil, nil, WithBodyBudget(2*maxBody))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g)
	defer srv.Close()
	// Two senders announce a maximal body and send only part of it.
	var slow []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST /in/gh HTTP/1.1\r\nHost: x\r\nX-Hub-Signature-256: sha256=00\r\nContent-Length: %d\r\n\r\n%s", maxBody, bytes.Repeat([]byte("a"), 10))
		slow = append(slow, c)
	}
	deadline := time.Now().Add(5 * time.Second)
	for g.inUse.Load() < 2*maxBody {
		if time.Now().After(deadline) {
			t.Fatalf("the slow senders hold %d bytes of the budget, want %d", g.inUse.Load(), 2*maxBody)
		}
		time.Sleep(5 * time.Millisecond)
	}
	post := func() *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/in/gh", bytes.NewReader([]byte(`{"a":1}`)))
		req.Header.Set("X-Hub-Signature-256", "sha256=00")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(); resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("a request past the body budget: %d Retry-After %q, want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got := g.Counts()["gh"].Unavailable; got != 1 {
		t.Errorf("unavailable = %d, want 1", got)
	}
	slow[0].Close() // its handler fails to read and releases its share
	deadline = time.Now().Add(5 * time.Second)
	for g.inUse.Load() > maxBody {
		if time.Now().After(deadline) {
			t.Fatalf("a closed sender's share was not released: %d bytes held", g.inUse.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if resp := post(); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request once the budget has room: %d, want 401 (read and verified)", resp.StatusCode)
	}
}

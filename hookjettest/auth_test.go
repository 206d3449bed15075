package hookjettest_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hookjet/hookjet/hookjettest"
)

func TestOAuth2EndpointEndToEnd(t *testing.T) {
	var fetches atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fetches.Add(1)
		if _, s, _ := r.BasicAuth(); s != "good" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(401)
			_, _ = io.WriteString(w, `{"error":"invalid_client","error_description":"nope"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"access_token":"tok-1","token_type":"Bearer","expires_in":3600}`)
	}))
	defer ts.Close()
	got := make(chan string, 10)
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer tok-1" {
			w.WriteHeader(401)
			return
		}
		got <- r.Header.Get("Hookjet-Event-Type") + "|" + r.Header.Get("Hookjet-Tenant")
		w.WriteHeader(204)
	}))
	defer rcv.Close()
	h := hookjettest.Start(t)
	id, _ := h.AddEndpoint(rcv.URL, "order.*")
	patch := func(secret string) {
		body := `{"auth":{"type":"oauth2","token_url":"` + ts.URL + `","client_id":"c","client_secret":"` + secret + `"}}`
		req, _ := http.NewRequest(http.MethodPatch, h.AdminURL()+"/api/v1/endpoints/"+id, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || bytes.Contains(b, []byte(secret)) {
			t.Fatalf("patch: %d %s", resp.StatusCode, b)
		}
	}
	patch("good")
	h.Publish("order.created", "evt-1", []byte(`{}`))
	h.Publish("order.paid", "evt-2", []byte(`{}`))
	h.WaitDelivered(id, "evt-1")
	h.WaitDelivered(id, "evt-2")
	a, b := <-got, <-got
	t.Logf("receiver saw %q %q, %d token fetches", a, b, fetches.Load())
	if fetches.Load() != 1 {
		t.Errorf("fetches %d", fetches.Load())
	}
	patch("bad")
	h.Publish("order.created", "evt-3", []byte(`{}`))
	d := h.WaitDeadLetter(id, "evt-3")
	t.Logf("dead letter: %+v", d)
	if d.Reason != "auth" || d.Attempts != 0 || !strings.Contains(d.LastError, "invalid_client") {
		t.Errorf("dead letter %+v", d)
	}
}

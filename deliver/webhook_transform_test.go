package deliver_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/hookjet/hookjet/deliver"
	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/webhook"
)

// A transformation's URL and headers reach the request: the URL replaces
// the endpoint's, the headers override its configured ones, and the
// signature covers the body as sent.
func TestWebhookSendTransformed(t *testing.T) {
	type seen struct {
		path   string
		header http.Header
		err    error
	}
	got := make(chan seen, 1)
	v, err := webhook.NewVerifier([]string{newSecret})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- seen{path: r.URL.Path, header: r.Header.Clone(), err: v.Verify(r.Header, body)}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, deliver.ClientOptions{Guard: deliver.NewGuard(true, nil)})
	d := open(c, destination.Endpoint{
		ID: "crm", URL: srv.URL + "/hooks", Signer: testSigner(t), Timeout: 5 * time.Second,
		Header: http.Header{"X-Api-Key": {"k-123"}, "X-Keep": {"kept"}},
	})
	res := d.Send(t.Context(), destination.Request{
		EventID: "evt_1", EventType: "order.created", Payload: []byte(`{"text":"order 7"}`),
		URL:    srv.URL + "/other",
		Header: http.Header{"X-Api-Key": {"from-script"}, "X-Kind": {"order"}},
	})
	if res.Class != deliver.Success {
		t.Fatalf("result %+v", res)
	}
	s := <-got
	if s.path != "/other" {
		t.Errorf("sent to %s, want the transformed /other", s.path)
	}
	if s.header.Get("X-Api-Key") != "from-script" || s.header.Get("X-Kind") != "order" || s.header.Get("X-Keep") != "kept" {
		t.Errorf("headers %v", s.header)
	}
	if s.err != nil {
		t.Errorf("signature: %v", s.err)
	}
}

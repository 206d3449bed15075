package dispatch

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/internal/testkit"
	"github.com/hookjet/hookjet/jetstream"
)

// The event's ordering key reaches the endpoint as Hookjet-Ordering-Key on
// every attempt: the first (from the fan-out), a retry (from a task), and a
// replay of its dead letter. An event without a key, or with one the
// publish API would refuse, sends none.
func TestOrderingKeyTravelsToTheEndpoint(t *testing.T) {
	var mu sync.Mutex
	keys := map[string][]string{} // event id -> the header of each request, "-" for none
	rc := &receiver{t: t, key: testkit.RefKey(t, testSecret), count: map[string]int{}}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		k := "-"
		if v := req.Header.Values(jetstream.HdrOrderingKey); len(v) > 0 {
			k = v[0]
			if len(v) > 1 {
				k = "several"
			}
		}
		mu.Lock()
		id := req.Header.Get("webhook-id")
		keys[id] = append(keys[id], k)
		mu.Unlock()
		rc.serve(w, req)
	}))
	t.Cleanup(rc.srv.Close)
	rc.setAnswer(func(_, id string, n int) (int, http.Header) {
		switch {
		case id == "k1" && n == 1:
			return http.StatusInternalServerError, nil // retried from a task
		case id == "k2" && n == 1:
			return http.StatusBadRequest, nil // dead-lettered, then replayed
		}
		return http.StatusNoContent, nil
	})
	r := newRig(t, []config.Endpoint{endpointTo("a", rc)}, nil)
	publishKeyed := func(id, key string) {
		msg := nats.NewMsg(jetstream.EventsPrefix + "customer.updated")
		msg.Header.Set(jetstream.HdrMsgID, id)
		if key != "" {
			msg.Header.Set(jetstream.HdrOrderingKey, key)
		}
		msg.Data = []byte(`{}`)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := r.node.JetStream().PublishMsg(ctx, msg); err != nil {
			t.Fatalf("publish %s: %v", id, err)
		}
	}
	publishKeyed("k1", "customer-7")
	publishKeyed("k2", "customer 8/ü")
	publishKeyed("plain", "")
	publishKeyed("bad", strings.Repeat("k", 256)) // past publish.MaxKeyLen
	eventually(t, "k2 dead-lettered", 15*time.Second, func() bool {
		return slices.Equal(r.deadLetters("a"), []string{"k2 permanent"})
	})
	rc.waitDelivered([]string{"a bad", "a k1", "a plain"}, 15*time.Second)
	res, err := r.d.Queries().Replay(ctx5(t), api.ReplayRequest{Endpoint: "a", IDs: []string{"k2"}})
	if err != nil || res.Replayed != 1 {
		t.Fatalf("replay: %+v %v", res, err)
	}
	rc.waitDelivered([]string{"a bad", "a k1", "a k2", "a plain"}, 15*time.Second)

	mu.Lock()
	defer mu.Unlock()
	want := map[string][]string{
		"k1":    {"customer-7", "customer-7"},
		"k2":    {"customer 8/ü", "customer 8/ü"},
		"plain": {"-"},
		"bad":   {"-"},
	}
	for id, w := range want {
		if !slices.Equal(keys[id], w) {
			t.Errorf("%s: Hookjet-Ordering-Key per request %q, want %q", id, keys[id], w)
		}
	}
}

package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/client"
	"github.com/hookjet/hookjet/hookjettest"
	"github.com/hookjet/hookjet/webhook"
)

// Example publishes three events to an endpoint and pages through the
// endpoint's attempts, two a page, newest first, against a real hookjet
// (started here with hookjettest; in production, the admin API's address
// and admin.token).
func Example() {
	t := &exampleT{}
	defer t.cleanup()
	hj := hookjettest.Start(t)
	secret := hookjettest.NewSecret()
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		panic(err)
	}
	rcv := httptest.NewServer(webhook.Handler(v, nil, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer rcv.Close()
	ep := hj.AddEndpointWithSecret(rcv.URL, secret, "order.*")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := client.New(hj.AdminURL()) // client.WithToken(token) with admin.token set
	for i := 1; i <= 3; i++ {
		id := fmt.Sprintf("evt_%d", i)
		// Over HTTP: c.Publish(ctx, []api.PublishEvent{{ID: id, Type: "order.created", Data: ...}});
		// here over NATS, as most publishers do.
		hj.Publish("order.created", id, fmt.Appendf(nil, `{"order":%d}`, i))
		hj.WaitDelivered(ep, id)
	}
	waitRecords(ctx, c, ep, 3) // the delivery log records attempts within a moment

	for rec, err := range c.EndpointAttempts(ctx, ep, client.AttemptQuery{Limit: 2}) {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Println(rec.EventID, rec.Trigger, rec.Class, rec.Status)
	}
	// Output:
	// evt_3 delivery success 200
	// evt_2 delivery success 200
	// evt_1 delivery success 200
}

// waitRecords waits until the endpoint's first page of attempts holds n.
func waitRecords(ctx context.Context, c *client.Client, ep string, n int) {
	for ctx.Err() == nil {
		if p, err := c.EndpointAttemptsPage(ctx, ep, client.AttemptQuery{}); err == nil && len(p.Attempts) >= n {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ExampleClient_Publish publishes two events in one request, answered once
// both are stored.
func ExampleClient_Publish() {
	c := client.New("http://127.0.0.1:8089", client.WithToken(os.Getenv("HOOKJET_PUBLISH_TOKEN")))
	res, err := c.Publish(context.Background(), []api.PublishEvent{
		{ID: "evt_1", Type: "order.created", Data: json.RawMessage(`{"order":1}`), Tenant: "acme"},
		{Type: "order.created", Data: json.RawMessage(`{"order":2}`), Key: "customer-7"},
	})
	if err != nil {
		fmt.Println(err) // an *client.Error carries the status and the server's message
		return
	}
	fmt.Println(res.IDs, res.Duplicates, res.DuplicateIDs)
	for _, r := range res.Results {
		fmt.Println(r.ID, r.Stream, r.Seq, r.Duplicate) // a duplicate names the copy stored first
	}
}

// exampleT stands in for the *testing.T an Example does not have.
type exampleT struct {
	dirs     []string
	cleanups []func()
}

func (t *exampleT) Helper()                   {}
func (t *exampleT) Logf(string, ...any)       {}
func (t *exampleT) Cleanup(fn func())         { t.cleanups = append(t.cleanups, fn) }
func (t *exampleT) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "client-example-")
	if err != nil {
		panic(err)
	}
	t.dirs = append(t.dirs, dir)
	return dir
}

// cleanup runs the cleanups, last registered first, as testing does.
func (t *exampleT) cleanup() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
	for _, d := range t.dirs {
		_ = os.RemoveAll(d)
	}
}

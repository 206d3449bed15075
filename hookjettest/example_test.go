package hookjettest_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/hookjet/hookjet/hookjettest"
	"github.com/hookjet/hookjet/webhook"
)

// Example shows a test proving that an event reaches an endpoint, signed.
// In a real test, t is the test's *testing.T.
func Example() {
	t := newExampleT()
	defer t.cleanup()

	hj := hookjettest.Start(t)

	// The customer's endpoint verifies every request as a receiver would,
	// with the secret the endpoint will sign with, chosen first.
	secret := hookjettest.NewSecret()
	v, err := webhook.NewVerifier([]string{secret})
	if err != nil {
		t.Fatalf("%v", err)
	}
	got := make(chan string, 1)
	rcv := httptest.NewServer(webhook.Handler(v, nil, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got <- r.Header.Get("webhook-id") + " " + string(body)
	})))
	defer rcv.Close()
	ep := hj.AddEndpointWithSecret(rcv.URL, secret, "order.*")

	hj.Publish("order.created", "evt_42", []byte(`{"order":42}`))
	hj.WaitDelivered(ep, "evt_42")
	fmt.Println("verified:", <-got)
	// Output: verified: evt_42 {"order":42}
}

// exampleT stands in for the *testing.T an Example does not have.
type exampleT struct {
	dirs     []string
	cleanups []func()
}

func newExampleT() *exampleT { return &exampleT{} }

func (t *exampleT) Helper()                   {}
func (t *exampleT) Logf(string, ...any)       {}
func (t *exampleT) Cleanup(fn func())         { t.cleanups = append(t.cleanups, fn) }
func (t *exampleT) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

func (t *exampleT) TempDir() string {
	dir, err := os.MkdirTemp("", "hookjettest-example-")
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

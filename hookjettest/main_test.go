package hookjettest_test

import (
	"fmt"
	"net/http"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hookjet/hookjet/hookjettest"
	"github.com/hookjet/hookjet/internal/apicheck"
)

// TestMain fails the package if any goroutine (of hookjet, NATS, the test's
// connection or a receiver) outlives the tests: t.Cleanup must stop all.
// The calls to /api/v1/... of hookjettest and of the tests (through
// http.DefaultTransport) are validated against the OpenAPI document; a
// mismatch fails the call and the run.
func TestMain(m *testing.M) {
	openapi, err := apicheck.Install()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	hookjettest.SetAPITransport(func() http.RoundTripper { return openapi.Over(&http.Transport{}) })
	code := m.Run()
	for _, f := range openapi.Failures() {
		fmt.Fprintln(os.Stderr, f)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

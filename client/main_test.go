package client_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hookjet/hookjet/internal/apicheck"
)

// TestMain validates the client's calls (through http.DefaultTransport)
// against the OpenAPI document, and fails the package if a goroutine
// outlives the tests.
func TestMain(m *testing.M) {
	openapi, err := apicheck.Install()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
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

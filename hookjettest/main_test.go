package hookjettest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any goroutine (of hookjet, NATS, the test's
// connection or a receiver) outlives the tests: t.Cleanup must stop all.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

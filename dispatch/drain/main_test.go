package drain

import (
	"testing"

	"go.uber.org/goleak"
)

// The drains start goroutines: none outlives a test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

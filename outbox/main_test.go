package outbox_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/hookjet/hookjet/outbox/pgtest"
)

// pg is the cluster this package's tests and examples share; nil when
// PostgreSQL is not available (then tests skip loudly, examples do not run).
var pg *pgtest.Server

func TestMain(m *testing.M) {
	flag.Parse()
	var err error
	pg, err = pgtest.New()
	switch {
	case errors.Is(err, pgtest.ErrUnavailable) && os.Getenv("CI") == "":
		fmt.Fprintln(os.Stderr, "!!!", pgtest.Reason(err))
		// Examples cannot skip: run only the tests, which skip with the reason.
		if err := flag.Set("test.run", "^Test"); err != nil {
			panic(err)
		}
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if pg != nil {
		if err := pg.Close(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// needPG returns the shared cluster or skips the test with the reason.
func needPG(t *testing.T) *pgtest.Server {
	t.Helper()
	if pg == nil {
		_, err := pgtest.New()
		pgtest.Unavailable(t, err)
	}
	return pg
}

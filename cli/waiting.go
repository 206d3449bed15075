package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/client"
)

// runEndpointReset is `hookjet endpoints reset ID`.
func runEndpointReset(ctx context.Context, args []string, getenv func(string) string, stdout, _ io.Writer) error {
	f := newEndpointFlags("reset", getenv, stdout)
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	var e api.EndpointStatus
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		e, err = c.ResetBreaker(ctx, id, raw)
		return err
	}); printed || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "breaker of %s closed in every hookjet process; its waiting deliveries go now\n", id)
	printWaits(stdout, e.Waiting, "still waiting:")
	return nil
}

// printWaits prints why deliveries wait, one reason a line, under title.
func printWaits(w io.Writer, waits []api.Wait, title string) {
	if len(waits) == 0 {
		return
	}
	fmt.Fprintln(w, title)
	now := time.Now()
	for _, wt := range waits {
		fmt.Fprintln(w, "  "+api.Describe(wt, now))
	}
}

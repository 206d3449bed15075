package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"text/tabwriter"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/client"
)

// The delivery log's commands: endpoints attempts, export (events list
// and show: cli/eventscmd.go).

// printAttempts prints records as a table; withEvent adds the event's id.
func printAttempts(w io.Writer, recs []attempt.Record, withEvent bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "STARTED\t#\tTRIGGER\tCLASS\tSTATUS\tMS\tREASON/ERROR\tRESPONSE"
	if withEvent {
		head = "STARTED\tEVENT ID\tTYPE\t#\tTRIGGER\tCLASS\tSTATUS\tMS\tREASON/ERROR\tRESPONSE"
	}
	fmt.Fprintln(tw, head)
	for _, r := range recs {
		why := r.Error
		if r.Reason != "" {
			why = r.Reason + ": " + r.Error
		}
		status := "-"
		if r.Status != 0 {
			status = fmt.Sprint(r.Status)
		}
		resp := "-"
		if r.Response != "" {
			resp = r.Response
			if len(resp) > 60 {
				resp = resp[:60] + "..."
			}
			resp = strconv.Quote(resp)
		}
		num := "-" // a dead letter, parking or expiry is no attempt of its own
		if attempt.Sent(r.Class) {
			num = strconv.Itoa(r.Attempt)
		}
		ev := ""
		if withEvent {
			ev = r.EventID + "\t" + r.EventType + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s%s\t%s\t%s\t%s\t%.1f\t%s\t%s\n", r.StartedAt.UTC().Format("2006-01-02T15:04:05.000Z"), ev, num, r.Trigger, r.Class, status, r.DurationMS, orDash(why), resp)
	}
	return tw.Flush()
}

func runEndpointAttempts(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("attempts", getenv, stdout)
	class := f.String("class", "", "only this class: "+fmt.Sprint(attempt.Classes))
	since := f.String("since", "", "from this time: RFC 3339 or a duration ago, such as 2h")
	until := f.String("until", "", "before this time")
	limit := f.Int("limit", 100, "at most this many (1..1000)")
	after := f.String("after", "", "the next page: the cursor a previous page printed")
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	var page api.AttemptPage
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		page, err = c.EndpointAttemptsPage(ctx, id, client.AttemptQuery{Class: *class, Since: *since, Until: *until, Limit: *limit, After: *after}, raw)
		return err
	}); printed || err != nil {
		return err
	}
	if err := printAttempts(stdout, page.Attempts, true); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(stdout, "(more: --after %s)\n", page.Next)
	}
	return nil
}

const exportHelp = `hookjet export attempts|dlq --since T [--until T] [--endpoint ID] [--tenant T] [--format csv|jsonl]

Streams every matching attempt record of the delivery log (attempts), or
every dead letter with its age (dlq), to stdout: CSV with a header row
(default) or JSON lines; times in UTC. T is an RFC 3339 time or a duration
meaning "ago" (e.g. 720h). Shared flags: --admin ADDR, --token T, --config FILE.`

func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "attempts" && args[0] != "dlq") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, exportHelp)
			return errHelp
		}
		fmt.Fprintln(stderr, exportHelp)
		return usagef("export: want attempts or dlq")
	}
	what := args[0]
	fs := newFlags("export "+what, exportHelp, stdout)
	newClient := adminFlags(fs, getenv)
	since := fs.String("since", "", "from this time (required): RFC 3339 or a duration ago")
	until := fs.String("until", "", "before this time (default: now)")
	endpoint := fs.String("endpoint", "", "only this endpoint")
	tenant := fs.String("tenant", "", "attempts: only this tenant")
	format := fs.String("format", "csv", "csv or jsonl")
	if _, err := parseArgs(fs, args[1:], 0); err != nil {
		return err
	}
	if *since == "" {
		return usagef("export %s: --since is required", what)
	}
	if *format != "csv" && *format != "jsonl" {
		return usagef("export %s: --format must be csv or jsonl, got %q", what, *format)
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	err = c.export.Export(ctx, what, client.ExportQuery{Since: *since, Until: *until, Endpoint: *endpoint, Tenant: *tenant, Format: *format}, stdout)
	if _, ok := errors.AsType[*url.Error](err); ok {
		return fmt.Errorf("admin API at %s: %w (is hookjet serve running?)", c.base, err)
	}
	return c.answer(err)
}

// testFromLog fills out from the delivery log's records of the test event,
// when the log has its outcome; it reports whether it did.
func (c *adminClient) testFromLog(ctx context.Context, endpoint string, out *testOutcome) bool {
	ev, err := c.api.Event(ctx, out.EventID)
	if err != nil {
		return false // no log (off, older server) or not yet on record
	}
	for _, d := range ev.Deliveries {
		if d.Endpoint != endpoint || len(d.Attempts) == 0 {
			continue
		}
		out.Attempts = d.Attempts
		last := d.Attempts[len(d.Attempts)-1]
		switch d.State {
		case "delivered":
			out.Outcome, out.Status, out.LatencyMS = "delivered", last.Status, last.DurationMS
		case "dead_letter":
			out.Outcome, out.Reason, out.LastError = "dead_lettered", last.Reason, last.Error
			if last.Status != 0 {
				out.Status = last.Status
			}
		default:
			return false
		}
		return true
	}
	return false
}

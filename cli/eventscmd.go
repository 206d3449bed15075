package cli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/client"
)

const eventsHelp = `hookjet events list [--type T] [--tenant T] [--prefix P] [--since T] [--until T] [--limit N] [--cursor C] [--json]
hookjet events show ID [--json]

list: the events HOOKJET_EVENTS holds, newest first (from hookjet's index
of it: published time, id, type, tenant, ordering key, size, sequence).
--type and --tenant match exactly, --prefix the start of the id; --since and
--until are RFC 3339 times or durations ago (2h); --limit is the page size
(1..1000, default 100); a full page ends with the --cursor of the next one.

show: one event: its type, tenant, key, when it was published, its payload
(JSON pretty-printed, text as it is, anything else in base64; at most 64
KiB, and none when console.show_payloads is false), and for each endpoint
it matches what happened or why not: delivered, pending (and what holds it:
a disabled endpoint, an open breaker, a receiver's Retry-After),
dead_letter, discarded, or filtered_out (the endpoint's filter refuses it),
with every attempt from the delivery log (HOOKJET_LOG): when, trigger, HTTP
status, class, duration, error and the start of a non-2xx response body. An
endpoint that got the event more than once (redeliver, replay) shows each
delivery apart, numbered in order ("crm · delivery 2 (replay): delivered").
The request headers hookjet sends are in --json (secret values redacted).

Shared flags: --admin ADDR, --token T, --config FILE.`

func runEvents(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fmt.Fprintln(stdout, eventsHelp)
		return errHelp
	}
	if len(args) == 0 || (args[0] != "show" && args[0] != "list") {
		fmt.Fprintln(stderr, eventsHelp)
		return usagef("events: want list or show ID")
	}
	if args[0] == "list" {
		return runEventsList(ctx, args[1:], getenv, stdout)
	}
	return runEventShow(ctx, args[1:], getenv, stdout)
}

func runEventsList(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("events list", eventsHelp, stdout)
	f := endpointFlags{FlagSet: fs, client: adminFlags(fs, getenv), asJSON: fs.Bool("json", false, "print the API's JSON answer")}
	var q client.EventQuery
	fs.StringVar(&q.Type, "type", "", "only events of this type")
	fs.StringVar(&q.Tenant, "tenant", "", "only events of this tenant")
	fs.StringVar(&q.Prefix, "prefix", "", "only events whose id starts with this")
	fs.StringVar(&q.Since, "since", "", "published at or after: RFC 3339 or a duration ago, such as 2h")
	fs.StringVar(&q.Until, "until", "", "published before")
	fs.IntVar(&q.Limit, "limit", 100, "at most this many (1..1000)")
	fs.StringVar(&q.Cursor, "cursor", "", "the next page: the cursor a previous page printed")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	var page api.EventPage
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		page, err = c.EventsPage(ctx, q, raw)
		return err
	}); printed || err != nil {
		return err
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PUBLISHED\tID\tTYPE\tTENANT\tKEY\tSIZE\tSEQ")
	for _, e := range page.Events {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\n", e.PublishedAt.UTC().Format("2006-01-02T15:04:05.000Z"), e.ID, e.Type, orDash(e.Tenant), orDash(e.Key), e.Size, e.Seq)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if page.Next != "" {
		fmt.Fprintf(stdout, "(more: --cursor %s)\n", page.Next)
	}
	return nil
}

func runEventShow(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("events show", eventsHelp, stdout)
	f := endpointFlags{FlagSet: fs, client: adminFlags(fs, getenv), asJSON: fs.Bool("json", false, "print the API's JSON answer")}
	pos, err := parseArgs(fs, args, 1)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("events show: want the event id")
	}
	var ev api.Event
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		ev, err = c.Event(ctx, pos[0], raw)
		return err
	}); printed || err != nil {
		return err
	}
	published, size := "-", "-"
	if ev.PublishedAt != nil {
		published = ev.PublishedAt.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	if ev.Size != nil {
		size = fmt.Sprintf("%d bytes", *ev.Size)
	}
	fmt.Fprintf(stdout, "event      %s\ntype       %s\ntenant     %s\nkey        %s\npublished  %s\nsize       %s\n",
		ev.ID, orDash(ev.Type), orDash(ev.Tenant), orDash(ev.Key), published, size)
	if ev.Seq != 0 {
		fmt.Fprintf(stdout, "seq        %d\n", ev.Seq)
	}
	printPayload(stdout, &ev)
	printDeliveries(stdout, ev.Deliveries)
	return nil
}

// printPayload prints ev's payload: JSON indented, UTF-8 text as it is,
// anything else in base64.
func printPayload(w io.Writer, ev *api.Event) {
	switch {
	case ev.DataHidden:
		fmt.Fprintln(w, "\npayload: hidden (console.show_payloads is false)")
		return
	case ev.Data != nil:
		var buf strings.Builder
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		var v any
		if json.Unmarshal(ev.Data, &v) == nil && enc.Encode(v) == nil {
			fmt.Fprintf(w, "\npayload:\n%s", buf.String())
			return
		}
		fmt.Fprintf(w, "\npayload:\n%s\n", ev.Data)
	case ev.DataBase64 != "":
		raw, err := base64.StdEncoding.DecodeString(ev.DataBase64)
		cut := ""
		if ev.DataTruncated {
			cut = fmt.Sprintf(" (the first %d bytes)", len(raw))
		}
		if err == nil && utf8.Valid(raw) {
			fmt.Fprintf(w, "\npayload%s:\n%s\n", cut, raw)
			return
		}
		fmt.Fprintf(w, "\npayload%s, base64:\n%s\n", cut, ev.DataBase64)
	}
}

// printDeliveries prints each endpoint's deliveries with their attempts.
func printDeliveries(w io.Writer, ds []api.EventDelivery) {
	per := map[string]int{}
	for _, d := range ds {
		per[d.Endpoint]++
	}
	for _, d := range ds {
		state := d.State
		if d.Reason != "" {
			state += " — " + d.Reason
		}
		if per[d.Endpoint] > 1 {
			fmt.Fprintf(w, "\n%s · delivery %d (%s): %s\n", d.Endpoint, d.Number, d.Trigger, state)
		} else {
			fmt.Fprintf(w, "\n%s: %s\n", d.Endpoint, state)
		}
		if d.Request != nil && d.Request.URL != "" {
			names := make([]string, 0, len(d.Request.Headers))
			for n := range d.Request.Headers {
				names = append(names, n)
			}
			slices.Sort(names)
			fmt.Fprintf(w, "  request: %s %s (headers: %s)\n", d.Request.Method, d.Request.URL, strings.Join(names, ", "))
		}
		if len(d.Attempts) > 0 {
			_ = printAttempts(w, d.Attempts, false)
		}
	}
	if len(ds) == 0 {
		fmt.Fprintln(w, "\nno endpoint matches it, and no delivery is on record")
	}
}

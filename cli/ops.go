package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/client"
	"github.com/hookjet/hookjet/config"
)

// adminClient talks to a running hookjet's admin API through package
// client.
type adminClient struct {
	base string         // the API's address, for messages
	api  *client.Client // every call but exports: 5 minutes at most
	// export streams exports, which may be long: no overall timeout.
	export *client.Client
}

// adminFlags adds the flags every operator command shares and returns a
// function that builds the client after parsing.
func adminFlags(fs interface {
	String(name, value, usage string) *string
}, getenv func(string) string) func() (*adminClient, error) {
	path := fs.String("config", getenv("HOOKJET_CONFIG"), "config file to read admin.listen and admin.token from")
	addr := fs.String("admin", "", "admin API address (default: admin.listen from the config)")
	token := fs.String("token", "", "admin bearer token (default: admin.token from the config or $HOOKJET_ADMIN_TOKEN)")
	return func() (*adminClient, error) {
		cfg, err := loadClientConfig(*path, getenv)
		if err != nil {
			return nil, err
		}
		if *token == "" {
			if err := cfg.Need("admin.token"); err != nil {
				return nil, err
			}
		}
		base, tok := cfg.Admin.Listen, cfg.Admin.Token.Reveal()
		if *addr != "" {
			base = *addr
		}
		if *token != "" {
			tok = *token
		}
		api := client.New(base, client.WithToken(tok), client.WithHTTPClient(&http.Client{Timeout: 5 * time.Minute}))
		return &adminClient{base: api.BaseURL(), api: api, export: client.New(base, client.WithToken(tok))}, nil
	}
}

// answer turns an error of a client call into the command's: an error
// answer of the API is an [*apiError], no answer at all names the address
// and the likely cause.
func (c *adminClient) answer(err error) error {
	if err == nil {
		return nil
	}
	if ce, ok := errors.AsType[*client.Error](err); ok {
		return &apiError{Status: ce.Status, Msg: ce.Message, Field: ce.Field, Errors: ce.Errors}
	}
	if _, ok := errors.AsType[*url.Error](err); ok {
		return c.unreachable(err)
	}
	return fmt.Errorf("admin API: %w", err)
}

// unreachable is the error for an admin API that did not answer: its
// address and the likely cause.
func (c *adminClient) unreachable(err error) error {
	return fmt.Errorf("admin API at %s: %w (is hookjet serve running? It serves the admin API on admin.listen: pass --admin ADDR, or --config with the file hookjet serve uses)", c.base, err)
}

// apiError is an error answer of the admin API: {"error", "field"?}.
type apiError struct {
	Status int    `json:"-"`
	Msg    string `json:"error"`
	Field  string `json:"field"`
	// Errors lists every problem of a request body, the first one as Msg.
	Errors []client.FieldError `json:"errors"`
}

func (e *apiError) Error() string {
	msg := fmt.Sprintf("admin API: HTTP %d", e.Status)
	if e.Msg != "" {
		msg = fmt.Sprintf("admin API: %s (HTTP %d)", e.Msg, e.Status)
	}
	if e.Status == http.StatusUnprocessableEntity && len(e.Errors) > 1 { // the catalogue's refusal: every problem
		for _, p := range e.Errors[1:] {
			msg += "; " + p.Error
		}
	}
	if e.Status == http.StatusUnauthorized {
		msg += "; pass the admin token with --token or $HOOKJET_ADMIN_TOKEN, or --config with the file whose admin.token the server uses"
	}
	return msg
}

// Unwrap makes an answer that is the user's bad input (a 4xx: a bad
// field, a conflict, a wrong token, a body too large) a usage error, exit 2.
// Other answers are runtime errors, exit 1: 404 (what was asked for is not
// there, or is not there yet), 408 and 429 (try again), 5xx.
func (e *apiError) Unwrap() error {
	switch {
	case e.Status == http.StatusNotFound, e.Status == http.StatusRequestTimeout, e.Status == http.StatusTooManyRequests:
		return nil
	case e.Status >= 400 && e.Status < 500:
		return ErrUsage
	}
	return nil
}

func printJSON(w io.Writer, raw json.RawMessage) error {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return err
	}
	buf.WriteByte('\n')
	_, err := w.Write(buf.Bytes())
	return err
}

const statusHelp = `hookjet status [--json] [--admin ADDR] [--token T] [--config FILE]

Shows how much is waiting, how old the oldest message is, what is in flight,
and what was delivered or failed in the last hour; with the inbound gateway,
per source what it accepted and refused since the process started; then,
for each endpoint whose deliveries wait, why and until when (disabled,
circuit breaker open, held by a receiver's Retry-After, rate limited,
in-flight cap full, ordering keys held behind an earlier delivery). Pending
counts the deliveries of the ordered lane (ordering: key) too.`

func runStatus(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("status", statusHelp, stdout)
	newClient := adminFlags(fs, getenv)
	asJSON := fs.Bool("json", false, "print JSON")
	if _, err := parseArgs(fs, args, 0); err != nil {
		return err
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	s, err := c.api.Summary(ctx, client.Raw(&raw))
	if err := c.answer(err); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, raw)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "pending\t%d\n", s.Pending)
	fmt.Fprintf(tw, "awaiting retry\t%d\n", s.AwaitingRetry)
	fmt.Fprintf(tw, "in flight\t%d\n", s.InFlight)
	fmt.Fprintf(tw, "oldest pending\t%s\n", (time.Duration(s.OldestPendingAgeSeconds * float64(time.Second))).Round(time.Second))
	fmt.Fprintf(tw, "dead letters\t%d\n", s.DeadLetter)
	fmt.Fprintf(tw, "delivered (last hour)\t%d\n", s.DeliveredLastHour)
	fmt.Fprintf(tw, "failed attempts (last hour)\t%d\n", s.FailedLastHour)
	fmt.Fprintf(tw, "endpoints\t%d (%d disabled, %d breakers not closed)\n", s.Endpoints, s.DisabledEndpoints, s.OpenBreakers)
	printInboundCounts(tw, s.Inbound) // cli/inbound.go
	if err := tw.Flush(); err != nil {
		return err
	}
	title := "waiting:"
	if s.WaitingEndpoints > api.MaxWaiting {
		title = fmt.Sprintf("waiting (the first %d of %d endpoints):", api.MaxWaiting, s.WaitingEndpoints)
	}
	printWaits(stdout, s.Waiting, title)
	return nil
}

const endpointsHelp = `hookjet endpoints [ID] [--json] [--tenant T] [--limit N] [--after ID]
                  [--enable ID | --disable ID] [--admin ADDR] [--token T] [--config FILE]
hookjet endpoints add|show|update|rm|rotate|test|redeliver|reset ...   (see 'hookjet endpoints add --help')

Lists endpoints, ordered by id, with their breaker state, latency
percentiles (rolling 24h), first-attempt success rate, pending messages,
dead letters and why their deliveries wait (WAITING: disabled, breaker_open,
held, rate_limited ... and until when): at most --limit (default 100, at most 1000) of them, after the
id --after, of tenant --tenant; when more remain it prints the --after value
of the next page. With ID it shows that endpoint. --enable and --disable
switch an endpoint on or off for every hookjet process.`

func runEndpoints(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && endpointCommands[args[0]] != nil {
		return endpointCommands[args[0]](ctx, args[1:], getenv, stdout, stderr)
	}
	fs := newFlags("endpoints", endpointsHelp, stdout)
	newClient := adminFlags(fs, getenv)
	asJSON := fs.Bool("json", false, "print JSON")
	enable := fs.String("enable", "", "re-enable this endpoint")
	disable := fs.String("disable", "", "disable this endpoint")
	tenant := fs.String("tenant", "", "list only this tenant's endpoints")
	limit := fs.Int("limit", 100, "list at most this many (1..1000)")
	after := fs.String("after", "", "list the endpoints whose ids sort after this one (the next page)")
	pos, err := parseArgs(fs, args, 2)
	if err != nil {
		return err
	}
	if len(pos) == 2 { // a word before the id is a command this version lacks
		return usagef("endpoints: unknown command %q%s (want %s, or an id alone)", pos[0], didYouMean(pos[0], endpointCommandNames()), strings.Join(endpointCommandNames(), ", "))
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	var list api.EndpointPage
	one := func(e api.EndpointStatus, err error) error {
		list.Endpoints = []api.EndpointStatus{e}
		return err
	}
	switch {
	case *enable != "" && *disable != "":
		return usagef("endpoints: --enable and --disable exclude each other")
	case *enable != "":
		err = one(c.api.EnableEndpoint(ctx, *enable, client.Raw(&raw)))
	case *disable != "":
		err = one(c.api.DisableEndpoint(ctx, *disable, client.Raw(&raw)))
	case len(pos) == 1:
		err = one(c.api.Endpoint(ctx, pos[0], client.Raw(&raw)))
	default:
		list, err = c.api.Endpoints(ctx, client.EndpointQuery{Tenant: *tenant, Limit: *limit, After: *after}, client.Raw(&raw))
	}
	if err := c.answer(err); err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, raw)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tBREAKER\tFAILS\tP50\tP95\tP99\tSAMPLES\t1ST OK\tPENDING\tDLQ\tWAITING\tURL")
	for _, e := range list.Endpoints {
		st := "enabled"
		if e.Disabled {
			st = "disabled"
		}
		p50, p95, p99 := latencies(e.LatencyMS)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%d\t%.1f%%\t%d\t%d\t%s\t%s\n", e.ID, st, e.Breaker.State,
			e.Breaker.ConsecutiveFailures, p50, p95, p99, e.LatencyMS.Samples,
			100*e.FirstAttemptSuccessRate, e.Pending, e.DeadLetters, api.Brief(e.Waiting), e.URL)
	}
	if list.Next != "" {
		fmt.Fprintf(tw, "(more: --after %s)\n", list.Next)
	}
	return tw.Flush()
}

// didYouMean is ` (did you mean "x"?)` for the name of names nearest to
// word, or "" when none is near.
func didYouMean(word string, names []string) string {
	if c := config.Closest(word, names); c != "" {
		return fmt.Sprintf(" (did you mean %q?)", c)
	}
	return ""
}

const dlqHelp = `hookjet dlq list|stats|replay|discard [flags]

  list     [--endpoint ID] [--since T] [--until T] [--limit N] [--json]
  stats    [--json]
  replay   [--endpoint ID] [--since T] [--until T] [--id EVENT_ID ...] [--dry-run] [--json]
  discard  [--endpoint ID] [--since T] [--until T] [--id EVENT_ID ...] [--dry-run] [--json]

T is an RFC 3339 time or a duration meaning "ago" (e.g. 2h). A replayed dead
letter goes back to its endpoint only, keeps its webhook-id and starts with
fresh attempts; it leaves the DLQ once the replay copy is stored. discard
deletes dead letters for good (the delivery log records them as discarded);
it needs --endpoint, --id or --since, and --dry-run counts them first.
Shared flags: --admin ADDR, --token T, --config FILE.`

// dlqCommands are the subcommands of "hookjet dlq".
var dlqCommands = []string{"list", "stats", "replay", "discard"}

func runDLQ(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 || !slices.Contains(dlqCommands, args[0]) {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, dlqHelp)
			return errHelp
		}
		fmt.Fprintln(stderr, dlqHelp)
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			return usagef("dlq: unknown command %q%s (want list, stats, replay or discard)", args[0], didYouMean(args[0], dlqCommands))
		}
		return usagef("dlq: want list, stats, replay or discard")
	}
	sub := args[0]
	fs := newFlags("dlq "+sub, dlqHelp, stdout)
	newClient := adminFlags(fs, getenv)
	asJSON := fs.Bool("json", false, "print JSON")
	endpoint := fs.String("endpoint", "", "only this endpoint")
	since := fs.String("since", "", "stored at or after (RFC 3339 or duration ago)")
	until := fs.String("until", "", "stored before (RFC 3339 or duration ago)")
	limit := fs.Int("limit", 100, "list at most this many")
	dry := fs.Bool("dry-run", false, "replay, discard: only report how many match")
	var ids multiFlag
	fs.Var(&ids, "id", "replay, discard: this event id (repeatable)")
	if _, err := parseArgs(fs, args[1:], 0); err != nil {
		return err
	}
	c, err := newClient()
	if err != nil {
		return err
	}
	var raw json.RawMessage
	switch sub {
	case "list":
		entries, err := c.api.DeadLetters(ctx, client.DLQQuery{Endpoint: *endpoint, Since: *since, Until: *until, Limit: *limit}, client.Raw(&raw))
		if err := c.answer(err); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, raw)
		}
		return printDLQList(stdout, entries)
	case "stats":
		stats, err := c.api.DeadLetterStats(ctx, client.Raw(&raw))
		if err := c.answer(err); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, raw)
		}
		return printDLQStats(stdout, stats)
	case "discard":
		return dlqDiscard(ctx, c, api.DiscardRequest{Endpoint: *endpoint, Since: *since, Until: *until, IDs: ids, DryRun: *dry}, *asJSON, stdout)
	default:
		req := api.ReplayRequest{Endpoint: *endpoint, Since: *since, Until: *until, IDs: ids, DryRun: *dry}
		res, err := c.api.Replay(ctx, req, client.Raw(&raw))
		if err := c.answer(err); err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, raw)
		}
		return printReplay(stdout, res, *dry)
	}
}

// printReplay prints the answer of a replay.
func printReplay(stdout io.Writer, res api.ReplayResult, dry bool) error {
	if dry {
		fmt.Fprintf(stdout, "dry run: %d dead letter(s) match; nothing replayed\n", res.Matched)
		for _, w := range res.Warnings {
			fmt.Fprintln(stdout, "warning:", w)
		}
		return nil
	}
	fmt.Fprintf(stdout, "matched %d, replayed %d, skipped %d\n", res.Matched, res.Replayed, res.Skipped)
	for _, e := range res.Errors {
		fmt.Fprintln(stdout, "  ", e)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stdout, "warning:", w)
	}
	if res.Skipped > 0 {
		return errors.New("some dead letters were not replayed")
	}
	return nil
}

// dlqDiscard is `hookjet dlq discard`.
func dlqDiscard(ctx context.Context, c *adminClient, req api.DiscardRequest, asJSON bool, stdout io.Writer) error {
	if req.Endpoint == "" && len(req.IDs) == 0 && req.Since == "" && req.Until == "" {
		return usagef("dlq discard: name the dead letters: --endpoint ID, --id EVENT_ID or --since T (discarding is final)")
	}
	var raw json.RawMessage
	res, err := c.api.Discard(ctx, req, client.Raw(&raw))
	if err := c.answer(err); err != nil {
		return err
	}
	if asJSON {
		return printJSON(stdout, raw)
	}
	if req.DryRun {
		fmt.Fprintf(stdout, "dry run: %d dead letter(s) match; nothing discarded\n", res.Matched)
		return nil
	}
	fmt.Fprintf(stdout, "matched %d, discarded %d\n", res.Matched, res.Discarded)
	return nil
}

// printDLQList prints the answer of GET /api/v1/dlq as a table.
func printDLQList(stdout io.Writer, entries []api.DLQEntry) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEQ\tENDPOINT\tEVENT ID\tTYPE\tREASON\tATTEMPTS\tSTATUS\tLAST ERROR\tLAST ATTEMPT\tRESPONSE")
	for _, e := range entries {
		resp := e.LastResponse
		if len(resp) > 60 {
			resp = resp[:60] + "..."
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%q\n", e.Seq, e.Endpoint, e.EventID, e.EventType, e.Reason, e.Attempts, statusText(e.LastStatus), e.LastError, e.LastAttempt, resp)
	}
	fmt.Fprintf(tw, "(%d shown)\n", len(entries))
	return tw.Flush()
}

// printDLQStats prints the answer of GET /api/v1/dlq/stats as a table.
func printDLQStats(stdout io.Writer, stats []api.DLQStat) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tCOUNT\tREASON\tSTATUS\tMOST COMMON ERROR\tAVG ATTEMPTS\tFIRST\tLAST")
	for _, s := range stats {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%.1f\t%s\t%s\n", s.Endpoint, s.Count, s.MostCommonReason, statusText(s.MostCommonStatus), s.MostCommonError, s.AverageAttempts, s.First, s.Last)
	}
	return tw.Flush()
}

// latencies are an endpoint's p50, p95 and p99 as "12.3ms", or "-" each
// while it has no samples (no delivery yet: not 0 ms).
func latencies(l api.Latency) (p50, p95, p99 string) {
	if l.Samples == 0 {
		return "-", "-", "-"
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "ms" }
	return f(l.P50), f(l.P95), f(l.P99)
}

package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/client"
)

// endpointCommands are the subcommands of "hookjet endpoints".
var endpointCommands = map[string]func(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error{
	"add":       runEndpointAdd,
	"show":      runEndpointShow,
	"update":    runEndpointUpdate,
	"rm":        runEndpointRm,
	"rotate":    runEndpointRotate,
	"test":      runEndpointTest,
	"redeliver": runEndpointRedeliver,
	"reset":     runEndpointReset,
	"enable":    runEndpointEnable,
	"disable":   runEndpointDisable,
	"attempts":  runEndpointAttempts, // the delivery log: cli/deliverylogcmd.go
	"try":       runEndpointTry,      // filter and transform tests: cli/try.go
}

// endpointCommandNames lists endpointCommands, sorted.
func endpointCommandNames() []string { return slices.Sorted(maps.Keys(endpointCommands)) }

const endpointManageHelp = `hookjet endpoints add --url URL | --destination JSON|@file [--id ID] [--events P ...] [--tenant T] [--description D] [--filter EXPR|@file] [--transform JS|@file] [--ordering none|key] [--ordering-on-dead-letter skip|hold] [--auth TYPE --auth-* V] [--proxy URL|none] [--data JSON|@file]
hookjet endpoints show ID
hookjet endpoints update ID [--url URL] [--destination JSON|@file] [--events P ...] [--tenant T] [--description D] [--filter EXPR|@file] [--transform JS|@file] [--ordering none|key] [--ordering-on-dead-letter skip|hold] [--auth TYPE --auth-* V] [--proxy URL|none] [--data JSON|@file]
hookjet endpoints rm ID
hookjet endpoints rotate ID [--grace D]
hookjet endpoints test ID [--type T [--data JSON|@file]] [--wait D]
hookjet endpoints redeliver ID --since T [--until T] [--dry-run]
hookjet endpoints reset ID
hookjet endpoints enable ID
hookjet endpoints disable ID
hookjet endpoints attempts ID [--class C] [--since T] [--until T] [--limit N] [--after CURSOR]
hookjet endpoints try ID (--event-id E | --type T [--data JSON|@file] [--tenant T] [--key K] [--header K=V ...]) [--filter EXPR|@file] [--transform JS|@file]

Manage endpoints through the admin API; endpoints created this way live in
NATS and reach every hookjet process within seconds. add prints the new id
and its signing secret (shown only once). update changes only the fields
given; --data takes any field of the API's JSON (headers, secrets, timeout,
max_in_flight, max_backlog, rate_limit, retry, breaker, ordering,
ordering_on_dead_letter, auth, proxy, transform_timeout,
transform_max_memory; null restores a default). --filter sets a CEL
expression the endpoint's events must satisfy, --transform a JavaScript
function handler(webhook) that reshapes each delivery (docs/filters.md); ""
removes them. try shows whether the endpoint's filter (or --filter) lets an
event through and the request its transform (or --transform) would send,
without delivering anything. --ordering key delivers
the events of one ordering key (Hookjet-Ordering-Key) one at a time, in
publish order; --ordering-on-dead-letter says whether such a key moves on
(skip) or waits (hold) once one of its deliveries is dead-lettered. --auth
basic|bearer|oauth2|mtls with --auth-username, --auth-password,
--auth-token, --auth-token-url, --auth-client-id, --auth-client-secret,
--auth-scope (repeatable), --auth-audience, --auth-cert and --auth-key
(PEM text, e.g. "$(cat client.pem)") sets how requests authenticate, as a
whole; --auth none removes it. --proxy names the endpoint's egress proxy
(http://host:port) or none. show lists the auth's type (never its
credentials), the proxy and the keys held, why and since when. rm
stops deliveries and discards the waiting ones. rotate prints a new secret;
the old one keeps signing for --grace (default 24h, at most 168h). test
sends a hookjet.test event, or one of --type with the payload --data
(default {}), to that endpoint only, and waits for its outcome (exit 1 if it was
dead-lettered or no outcome came within --wait). redeliver sends stored
events from --since (RFC 3339 or a duration ago, such as 2h) to the endpoint
again with their original ids. reset closes the endpoint's circuit breaker
(and lifts a Retry-After hold) in every hookjet process: its waiting
deliveries go at once instead of after the cooldown. disable stops
deliveries to the endpoint in every hookjet process (they wait, and expire
past retry.max_age); enable resumes them. attempts lists the
endpoint's attempts from the delivery log, newest first. Endpoints from the
config file cannot be changed here (reset, test and redeliver work on
them). Bad input exits 2 naming the field.
Shared flags: --json, --admin ADDR, --token T, --config FILE.`

// endpointFlags is a flag set for one endpoints subcommand, with the shared
// admin and --json flags.
type endpointFlags struct {
	*flag.FlagSet
	client func() (*adminClient, error)
	asJSON *bool
}

func newEndpointFlags(sub string, getenv func(string) string, stdout io.Writer) endpointFlags {
	fs := newFlags("endpoints "+sub, endpointManageHelp, stdout)
	return endpointFlags{FlagSet: fs, client: adminFlags(fs, getenv), asJSON: fs.Bool("json", false, "print the API's JSON answer")}
}

// parseWithID parses flags given before or after the endpoint id, which is
// required when needID and refused otherwise, and returns it.
func (f endpointFlags) parseWithID(args []string, needID bool) (string, error) {
	most := 0
	if needID {
		most = 1
	}
	pos, err := parseArgs(f.FlagSet, args, most)
	if err != nil {
		return "", err
	}
	if needID && len(pos) == 0 {
		return "", usagef("%s: an endpoint id is required", f.Name())
	}
	if len(pos) == 0 {
		return "", nil
	}
	return pos[0], nil
}

// call makes one call with the client, turning the API's 400 answers into
// usage errors (exit 2) that name the field.
func (f endpointFlags) call(fn func(c *client.Client) error) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	err = c.answer(fn(c.api))
	if ae, ok := errors.AsType[*apiError](err); ok && ae.Status == http.StatusBadRequest {
		msg := ae.Msg
		if ae.Field != "" && !strings.HasPrefix(msg, ae.Field) {
			msg = ae.Field + ": " + msg
		}
		for _, p := range ae.Errors[min(1, len(ae.Errors)):] { // every problem, one a line
			line := p.Error
			if p.Field != "" && !strings.HasPrefix(line, p.Field) {
				line = p.Field + ": " + line
			}
			msg += "\n  " + line
		}
		return usagef("%s: %s", f.Name(), msg)
	}
	return err
}

// callFor makes one call with the client, passing fn the option that keeps
// the answer as it came; with --json it prints that answer and reports
// printed.
func (f endpointFlags) callFor(stdout io.Writer, fn func(c *client.Client, raw client.CallOption) error) (printed bool, err error) {
	var raw json.RawMessage
	if err := f.call(func(c *client.Client) error { return fn(c, client.Raw(&raw)) }); err != nil {
		return false, err
	}
	if *f.asJSON {
		return true, printJSON(stdout, raw)
	}
	return false, nil
}

// body builds the JSON of add and update from --data and the flags set.
func body(fs *flag.FlagSet, data string, fields map[string]any) (map[string]any, error) {
	out := map[string]any{}
	if data != "" {
		raw := []byte(data)
		if path, ok := strings.CutPrefix(data, "@"); ok {
			var err error
			if raw, err = os.ReadFile(path); err != nil {
				return nil, usagef("%s: --data: %v", fs.Name(), err)
			}
		}
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, usagef("%s: --data: want a JSON object: %v", fs.Name(), err)
		}
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for name, v := range fields {
		if set[name] {
			out[name] = v
		}
	}
	return out, nil
}

// destinationFlag puts the --destination JSON (or @file) into in.
func destinationFlag(fs *flag.FlagSet, value string, in map[string]any) error {
	if value == "" {
		return nil
	}
	raw := []byte(value)
	if path, ok := strings.CutPrefix(value, "@"); ok {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return usagef("%s: --destination: %v", fs.Name(), err)
		}
	}
	var d any
	if err := json.Unmarshal(raw, &d); err != nil {
		return usagef("%s: --destination: want a JSON object: %v", fs.Name(), err)
	}
	in["destination"] = d
	return nil
}

func runEndpointAdd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("add", getenv, stdout)
	u := f.String("url", "", "where deliveries are POSTed (required for a webhook)")
	dest := f.String("destination", "", `a broker destination as JSON, or @file: {"type":"nats","url":"nats://host:4222","subject":"orders.{type}"} (docs/configuration.md#destinations)`)
	id := f.String("id", "", "endpoint id, [a-z0-9_-]+ (default: generated, ep_...)")
	var events multiFlag
	f.Var(&events, "events", "event type pattern, such as order.* (repeatable; default: every event)")
	tenant := f.String("tenant", "", "tenant, for listing")
	desc := f.String("description", "", "free text for operators")
	code := codeFlags(f.FlagSet)
	ordering := orderingFlags(f.FlagSet)
	auth := authFlags(f.FlagSet)
	data := f.String("data", "", "more fields as JSON, or @file")
	if _, err := f.parseWithID(args, false); err != nil {
		return err
	}
	in, err := body(f.FlagSet, *data, map[string]any{"url": *u, "id": *id, "events": []string(events), "tenant": *tenant, "description": *desc})
	if err != nil {
		return err
	}
	if err := code(in); err != nil {
		return err
	}
	ordering(in)
	if err := destinationFlag(f.FlagSet, *dest, in); err != nil {
		return err
	}
	if err := auth(in); err != nil {
		return err
	}
	if in["url"] == nil && in["destination"] == nil {
		return usagef("endpoints add: --url is required (or --destination for a broker)")
	}
	var out api.CreatedEndpoint
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		out, err = c.CreateEndpoint(ctx, in, raw)
		return err
	}); printed || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "id      %s\n", out.ID)
	if out.Secret != "" {
		fmt.Fprintf(stdout, "secret  %s\n(the secret is shown only now: store it with the receiver)\n", out.Secret)
	}
	return nil
}

func runEndpointShow(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("show", getenv, stdout)
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	var e api.EndpointStatus
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		e, err = c.Endpoint(ctx, id, raw)
		return err
	}); printed || err != nil {
		return err
	}
	printEndpoint(stdout, e)
	return nil
}

// printEndpoint prints what `endpoints show` shows of e.
func printEndpoint(stdout io.Writer, e api.EndpointStatus) {
	st := "enabled"
	if e.Disabled {
		st = "disabled " + e.DisabledReason
	}
	lines := [][2]string{
		{"id", e.ID}, {"url", orDash(e.URL)}, {"destination", destinationText(e.Settings)}, {"events", strings.Join(e.Events, " ")}, {"state", st},
		{"source", e.Source}, {"tenant", orDash(e.Tenant)}, {"owner", orDash(e.Owner)}, {"description", e.Description},
		{"created", fmtTime(e.CreatedAt)}, {"updated", fmtTime(e.UpdatedAt)},
		{"breaker", fmt.Sprintf("%s (%d consecutive failures)", e.Breaker.State, e.Breaker.ConsecutiveFailures)},
		{"latency", latencyText(e.LatencyMS)},
		{"pending", fmt.Sprint(e.Pending)}, {"dead letters", fmt.Sprint(e.DeadLetters)},
		{"last test", lastTestText(e.LastTest)},
		{"secrets", fmt.Sprint(e.Secrets)}, {"headers", strings.Join(e.HeaderNames, " ")},
	}
	if s := e.Settings; s != nil {
		expiry := "-"
		if len(s.SecretsExpire) > 0 {
			ts := make([]string, len(s.SecretsExpire))
			for i, t := range s.SecretsExpire {
				ts[i] = fmtTime(&t)
			}
			expiry = "old secret stops signing at " + strings.Join(ts, ", ")
		}
		lines = append(lines,
			[2]string{"secret expiry", expiry},
			[2]string{"timeout", s.Timeout},
			[2]string{"max in flight", fmt.Sprint(s.MaxInFlight)},
			[2]string{"rate limit", rateText(s.RateLimit.RPS, s.RateLimit.Burst)},
			[2]string{"retry", fmt.Sprintf("base %s, cap %s, max %d attempts, max age %s", s.Retry.Base, s.Retry.Cap, s.Retry.MaxAttempts, s.Retry.MaxAge)},
			[2]string{"breaker opts", fmt.Sprintf("opens after %d failures, cooldown %s (at most %s), slow p95 %s", s.Breaker.FailureThreshold, s.Breaker.Cooldown, s.Breaker.MaxCooldown, s.Breaker.SlowP95)},
			[2]string{"max backlog", fmt.Sprint(s.MaxBacklog)})
	}
	if e.Settings != nil || e.HeldKeys != nil {
		lines = append(lines, [2]string{"ordering", orderingText(e.Settings, e.HeldKeys)})
	}
	if s := e.Settings; s != nil && s.Auth != "" {
		lines = append(lines, [2]string{"auth", s.Auth})
	}
	if s := e.Settings; s != nil && s.Proxy != "" {
		lines = append(lines, [2]string{"proxy", s.Proxy})
	}
	for _, l := range lines {
		fmt.Fprintf(stdout, "%-13s %s\n", l[0], l[1])
	}
	printHeldKeys(stdout, e.HeldKeys)
	if e.NextRetry != nil {
		fmt.Fprintf(stdout, "%-13s %s\n", "next retry", e.NextRetry.UTC().Format(time.RFC3339Nano))
	}
	if len(e.Waiting) == 0 {
		fmt.Fprintf(stdout, "%-13s %s\n", "waiting", "no: deliveries go at once")
	}
	printWaits(stdout, e.Waiting, "waiting:")
}

// lastTestText is the last test event's outcome for `endpoints show`.
func lastTestText(lt *api.LastTest) string {
	if lt == nil {
		return "- (none sent by this process; hookjet endpoints test ID)"
	}
	out := fmt.Sprintf("%s %s: %s, HTTP %s in %.1fms", fmtTime(&lt.At), lt.EventID, lt.Class, statusText(lt.Status), lt.DurationMS)
	if lt.Error != "" {
		out += " (" + lt.Error + ")"
	}
	return out
}

// rateText is a rate limit for `endpoints show`.
func rateText(rps float64, burst int) string {
	if rps <= 0 {
		return "unlimited"
	}
	return fmt.Sprintf("%g/s, burst %d", rps, burst)
}

func runEndpointEnable(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return setEndpointEnabled(ctx, "enable", args, getenv, stdout)
}

func runEndpointDisable(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return setEndpointEnabled(ctx, "disable", args, getenv, stdout)
}

// setEndpointEnabled is `endpoints enable|disable ID`: POST
// /api/v1/endpoints/{id}/enable or /disable.
func setEndpointEnabled(ctx context.Context, sub string, args []string, getenv func(string) string, stdout io.Writer) error {
	f := newEndpointFlags(sub, getenv, stdout)
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		if sub == "enable" {
			_, err = c.EnableEndpoint(ctx, id, raw)
		} else {
			_, err = c.DisableEndpoint(ctx, id, raw)
		}
		return err
	}); printed || err != nil {
		return err
	}
	if sub == "enable" {
		fmt.Fprintf(stdout, "enabled %s: deliveries resume in every hookjet process\n", id)
	} else {
		fmt.Fprintf(stdout, "disabled %s: its deliveries wait (and expire past retry.max_age) until 'hookjet endpoints enable %s'\n", id, id)
	}
	return nil
}

func fmtTime(t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func runEndpointUpdate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("update", getenv, stdout)
	u := f.String("url", "", "new URL")
	dest := f.String("destination", "", "new destination as JSON, or @file (null: back to a webhook)")
	var events multiFlag
	f.Var(&events, "events", "event type pattern (repeatable; replaces the list)")
	tenant := f.String("tenant", "", "new tenant")
	desc := f.String("description", "", "new description")
	code := codeFlags(f.FlagSet)
	ordering := orderingFlags(f.FlagSet)
	auth := authFlags(f.FlagSet)
	data := f.String("data", "", "fields as JSON, or @file (null restores a default)")
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	in, err := body(f.FlagSet, *data, map[string]any{"url": *u, "events": []string(events), "tenant": *tenant, "description": *desc})
	if err != nil {
		return err
	}
	if err := code(in); err != nil {
		return err
	}
	ordering(in)
	if *dest == "null" {
		in["destination"] = nil
	} else if err := destinationFlag(f.FlagSet, *dest, in); err != nil {
		return err
	}
	if err := auth(in); err != nil {
		return err
	}
	if len(in) == 0 {
		return usagef("endpoints update: nothing to change: give --url, --destination, --events, --tenant, --description, --filter, --transform, --ordering, --ordering-on-dead-letter, --auth, --proxy or --data")
	}
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		_, err = c.UpdateEndpoint(ctx, id, in, raw)
		return err
	}); printed || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "updated %s\n", id)
	return nil
}

func runEndpointRm(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("rm", getenv, stdout)
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	n, err := c.api.DeleteEndpoint(ctx, id)
	if err := c.answer(err); err != nil {
		return err
	}
	discarded := strconv.Itoa(n)
	if *f.asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{"id": id, "discarded": discarded})
	}
	fmt.Fprintf(stdout, "removed %s (%s waiting deliveries discarded; its dead letters stay)\n", id, discarded)
	return nil
}

func runEndpointRotate(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("rotate", getenv, stdout)
	grace := f.String("grace", "24h", "how long the old secret keeps signing (at most 168h)")
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	var secret string
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		secret, err = c.RotateSecret(ctx, id, *grace, raw)
		return err
	}); printed || err != nil {
		return err
	}
	fmt.Fprintf(stdout, "secret  %s\n(shown only now; the old secret keeps signing for %s)\n", secret, *grace)
	return nil
}

func runEndpointRedeliver(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("redeliver", getenv, stdout)
	since := f.String("since", "", "from this time: RFC 3339 or a duration ago, such as 2h (required)")
	until := f.String("until", "", "up to this time (default: now)")
	dry := f.Bool("dry-run", false, "only count the events that would be sent")
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	if *since == "" {
		return usagef("endpoints redeliver: --since is required")
	}
	var out api.RedeliverResult
	if printed, err := f.callFor(stdout, func(c *client.Client, raw client.CallOption) (err error) {
		out, err = c.Redeliver(ctx, id, api.RedeliverRequest{Since: *since, Until: *until, DryRun: *dry}, raw)
		return err
	}); printed || err != nil {
		return err
	}
	if *dry {
		fmt.Fprintf(stdout, "dry run: %d stored event(s) match; nothing sent\n", out.Matched)
		return nil
	}
	fmt.Fprintf(stdout, "matched %d, queued %d\n", out.Matched, out.Queued)
	return nil
}

// testOutcome is what "endpoints test" reports.
type testOutcome struct {
	EventID   string  `json:"event_id"`
	Outcome   string  `json:"outcome"`          // delivered, dead_lettered or pending
	Status    int     `json:"status,omitempty"` // HTTP status; absent when none is known
	LatencyMS float64 `json:"latency_ms,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	LastError string  `json:"last_error,omitempty"`
	// Attempts are the test event's records in the delivery log.
	Attempts []attempt.Record `json:"attempts,omitempty"`
}

func runEndpointTest(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f := newEndpointFlags("test", getenv, stdout)
	wait := f.Duration("wait", 30*time.Second, "how long to wait for the outcome")
	typ := f.String("type", "", "the test event's type (default hookjet.test)")
	data := f.String("data", "", "the test event's payload as JSON, or @file; only with --type (default {})")
	id, err := f.parseWithID(args, true)
	if err != nil {
		return err
	}
	req := api.TestRequest{Type: *typ}
	switch {
	case *data != "" && *typ == "":
		return usagef("endpoints test: --data needs --type")
	case *typ != "":
		req.Data = json.RawMessage("{}")
		if *data != "" {
			text, err := textOrFile(f.Name(), "data", *data)
			if err != nil {
				return err
			}
			if !json.Valid([]byte(text)) {
				return usagef("endpoints test: --data: want JSON")
			}
			req.Data = json.RawMessage(text)
		}
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	start := time.Now().UTC()
	out := testOutcome{Outcome: "pending"}
	if err := f.call(func(c *client.Client) (err error) {
		if req.Type != "" {
			out.EventID, err = c.TestEndpointWith(ctx, id, req)
			return err
		}
		out.EventID, err = c.TestEndpoint(ctx, id)
		return err
	}); err != nil {
		return err
	}
	deadline := time.Now().Add(*wait)
	for {
		if err := c.testOutcome(ctx, id, start, &out); err != nil {
			return err
		}
		if out.Outcome != "pending" || !time.Now().Before(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	c.awaitTestRecords(ctx, id, &out)
	return reportTest(stdout, out, *f.asJSON, *wait)
}

// testRecordWait bounds how long "endpoints test" waits for the delivery
// log's records of an outcome it learned elsewhere: the record is written
// after the attempt and indexed a moment later.
const testRecordWait = 2 * time.Second

// awaitTestRecords gives the delivery log a moment to show the records of
// an outcome found in the endpoint's last delivery or its dead letters, so
// that the attempts are printed whichever answered first. Without a log
// (off, an older server) it gives up after testRecordWait.
func (c *adminClient) awaitTestRecords(ctx context.Context, id string, out *testOutcome) {
	if out.Outcome == "pending" || len(out.Attempts) > 0 {
		return
	}
	deadline := time.Now().Add(testRecordWait)
	for time.Now().Before(deadline) {
		found := *out
		if c.testFromLog(ctx, id, &found) {
			*out = found
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// testOutcome looks the test event up: in the endpoint's dead letters, then
// in the endpoint's last delivery. It leaves out pending when neither knows.
func (c *adminClient) testOutcome(ctx context.Context, id string, start time.Time, out *testOutcome) error {
	if c.testFromLog(ctx, id, out) { // the delivery log: cli/deliverylogcmd.go
		return nil
	}
	entries, err := c.api.DeadLetters(ctx, client.DLQQuery{Endpoint: id, IDs: []string{out.EventID}, Since: start.Add(-time.Minute).Format(time.RFC3339)})
	if err := c.answer(err); err != nil {
		return err
	}
	if len(entries) > 0 {
		e := entries[0]
		out.Outcome, out.Reason, out.Status, out.LastError = "dead_lettered", e.Reason, e.LastStatus, e.LastError
		return nil
	}
	ep, err := c.api.Endpoint(ctx, id)
	if err := c.answer(err); err != nil {
		return err
	}
	switch ld := ep.LastDelivery; {
	case ld != nil && ld.EventID == out.EventID && ld.Status >= 200 && ld.Status < 300:
		out.Outcome, out.Status, out.LatencyMS = "delivered", ld.Status, ld.LatencyMS
	case ld == nil && ep.LastSuccess != nil && ep.LastSuccess.After(start):
		out.Outcome = "delivered" // this engine reports no per-event outcome: a success since the test was sent
	}
	return nil
}

// reportTest prints the outcome of a test event; dead-lettered or still
// pending is an error (exit 1).
func reportTest(stdout io.Writer, out testOutcome, asJSON bool, wait time.Duration) error {
	if asJSON {
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
	}
	if !asJSON && len(out.Attempts) > 0 {
		_ = printAttempts(stdout, out.Attempts, false)
	}
	switch out.Outcome {
	case "delivered":
		if !asJSON {
			status := "2xx"
			if out.Status != 0 {
				status = strconv.Itoa(out.Status)
			}
			fmt.Fprintf(stdout, "delivered %s: HTTP %s in %.1fms\n", out.EventID, status, out.LatencyMS)
		}
		return nil
	case "dead_lettered":
		if !asJSON {
			fmt.Fprintf(stdout, "dead-lettered %s: %s (last status %s, last error %s)\n", out.EventID, out.Reason, statusText(out.Status), orDash(out.LastError))
		}
		return fmt.Errorf("test event %s was dead-lettered: %s", out.EventID, out.Reason)
	default:
		return fmt.Errorf("test event %s: no outcome within %s (still pending or retrying; see hookjet endpoints show)", out.EventID, wait)
	}
}

// statusText is an HTTP status for a table: "-" for 0 (no response).
func statusText(status int) string {
	if status == 0 {
		return "-"
	}
	return strconv.Itoa(status)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// latencyText is the latency line of endpoints show: "-" while there are
// no samples.
func latencyText(l api.Latency) string {
	if l.Samples == 0 {
		return "- (no samples yet)"
	}
	p50, p95, p99 := latencies(l)
	return fmt.Sprintf("p50 %s p95 %s p99 %s (%d samples)", p50, p95, p99, l.Samples)
}

// destinationText is what `endpoints show` says of where deliveries go:
// the type, and for a broker its masked address and subject, topic or
// exchange and routing key.
func destinationText(s *api.EndpointSettings) string {
	if s == nil || s.Destination.Type == "" || s.Destination.Type == "webhook" {
		return "webhook"
	}
	d := s.Destination
	parts := []string{d.Type}
	if d.URL != "" {
		parts = append(parts, d.URL)
	}
	if len(d.Brokers) > 0 {
		parts = append(parts, strings.Join(d.Brokers, ","))
	}
	for _, kv := range [][2]string{{"subject", d.Subject}, {"topic", d.Topic}, {"exchange", d.Exchange}, {"routing key", d.RoutingKey}, {"sasl", d.SASLMechanism}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if d.JetStream != nil && !*d.JetStream {
		parts = append(parts, "core NATS (at most once)")
	}
	return strings.Join(parts, " ")
}

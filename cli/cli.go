package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/hookjet/hookjet/config"
)

// ErrUsage marks command-line mistakes; the process exits with code 2.
var ErrUsage = errors.New("usage")

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }
func (e usageError) Unwrap() error { return ErrUsage }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// errHelp is returned after --help printed its text: exit 0.
var errHelp = errors.New("help shown")

// ExitCode maps an error from Run to the exit code, printing it to stderr:
// 0 ok, 2 usage or configuration error, 1 runtime error.
func ExitCode(err error, stderr io.Writer) int {
	switch {
	case err == nil, errors.Is(err, errHelp):
		return 0
	case errors.Is(err, ErrUsage), errors.Is(err, config.ErrInvalid):
		fmt.Fprintln(stderr, "hookjet:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "hookjet:", err)
		return 1
	}
}

const usage = `hookjet delivers webhooks from NATS JetStream: applications publish events
to hookjet.events.<type>, hookjet signs them (Standard Webhooks) and POSTs them
to every endpoint that subscribed, with retries, a circuit breaker per endpoint
and a dead-letter stream.

Usage:
  hookjet <command> [flags]

Commands:
  serve       run hookjet (embedded NATS unless nats.url is set)
  publish     publish one event
  listen      run a local receiver that verifies and prints deliveries
  status      show the delivery summary (admin API)
  endpoints   list, show, add, update, remove, rotate, test, redeliver and
              reset (close the breaker of) endpoints (admin API)
  dlq         list, summarise and replay dead letters (admin API)
  event-types list, show, create, update and delete the event-type catalogue:
              descriptions, JSON Schemas, examples (admin API)
  events      list stored events; show one with its payload, deliveries and attempts
  export      stream attempts or dead letters as CSV or JSON lines
  outbox      relay a PostgreSQL outbox table into JetStream; 'outbox schema' prints its DDL
  inbound     'inbound test <source>': send a signed test event through the inbound gateway
  version     print the version

Run 'hookjet <command> --help' for a command's flags (help goes to stdout).
Exit codes: 0 ok, 1 runtime error, 2 usage or configuration error (an unknown
HOOKJET_* environment variable included).
`

// Run runs hookjet with args (without the program name). getenv reads the
// environment; output goes to stdout and stderr.
func Run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return usagef("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "version", "--version":
		return runVersion(rest, stdout)
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "publish":
		return runPublish(ctx, rest, getenv, stdout, stderr)
	case "listen":
		return runListen(ctx, rest, getenv, stdout, stderr)
	case "status":
		return runStatus(ctx, rest, getenv, stdout, stderr)
	case "endpoints":
		return runEndpoints(ctx, rest, getenv, stdout, stderr)
	case "dlq":
		return runDLQ(ctx, rest, getenv, stdout, stderr)
	case "event-types": // the catalogue: cli/eventtypes.go
		return runEventTypes(ctx, rest, getenv, stdout, stderr)
	case "events": // cli/eventscmd.go
		return runEvents(ctx, rest, getenv, stdout, stderr)
	case "export":
		return runExport(ctx, rest, getenv, stdout, stderr)
	case "outbox":
		return runOutbox(ctx, rest, getenv, stdout, stderr)
	case "inbound":
		return runInbound(ctx, rest, getenv, stdout, stderr) // cli/inboundcmd.go
	default:
		fmt.Fprint(stderr, usage)
		return usagef("unknown command %q", cmd)
	}
}

// newFlags returns a flag set whose --help prints summary and the flags to
// stdout. A mistake prints nothing here: it comes back from parse as a
// usage error, which ExitCode prints to stderr.
func newFlags(name, summary string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "%s\n\nFlags:\n", strings.TrimSpace(summary))
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses flags, mapping -h to errHelp and mistakes to usage errors.
// The flag package calls Usage for both; only --help gets it.
func parse(fs *flag.FlagSet, args []string) error {
	usage := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = usage
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return errHelp
		}
		return usagef("%s: %v (see 'hookjet %s --help')", fs.Name(), err, fs.Name())
	}
	return nil
}

// parseArgs parses fs from args, with flags allowed before and after the
// positional arguments, and returns those; more than most of them is a usage
// error, so that nothing typed is silently ignored (a --dry-run after a stray
// word included).
func parseArgs(fs *flag.FlagSet, args []string, most int) ([]string, error) {
	var pos []string
	for rest := args; ; {
		if err := parse(fs, rest); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			break
		}
		pos = append(pos, fs.Arg(0))
		rest = fs.Args()[1:]
	}
	if len(pos) > most {
		return nil, usagef("%s: unexpected argument %q", fs.Name(), pos[most])
	}
	return pos, nil
}

// loadConfig reads the config file at path, or only defaults and the
// environment when path is empty.
func loadConfig(path string, getenv func(string) string) (*config.Config, error) {
	if path == "" {
		return config.Parse(nil, getenv)
	}
	return config.Load(path, getenv)
}

// loadClientConfig is loadConfig for a client command: it reads the file
// without resolving the env:/file: secrets it does not use, so that, say,
// hookjet status runs without the server's STRIPE_WHSEC; the command asks
// for the ones it uses with Config.Need.
func loadClientConfig(path string, getenv func(string) string) (*config.Config, error) {
	if path == "" {
		return config.ParseClient(nil, getenv)
	}
	return config.LoadClient(path, getenv)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errFailed):
		os.Exit(1)
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

var (
	errFailed = errors.New("soak failed")
	errUsage  = errors.New("usage")
)

// options are the command's flags.
type options struct {
	duration, quiet                 time.Duration
	faults, hookjets, workers       int
	maxInFlight                     int
	seed                            uint64
	rate, failRate                  float64
	kinds                           []string
	kindsSet                        bool // -kinds was given: a kind that cannot run is an error
	strict                          bool // -strict: the per-crash bound per fault
	work, hookjetBin, natsBin, sync string
}

func parseFlags(args []string, stdout io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stdout)
	fs.Usage = func() {
		fmt.Fprintln(stdout, "usage: soak [flags]\n\nhookjet's fault campaign (see README, \"Fault campaign\"). Flags:")
		fs.PrintDefaults()
	}
	fs.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the load and the faults run")
	fs.IntVar(&o.faults, "faults", 30, "number of faults, spread over -duration")
	fs.Uint64Var(&o.seed, "seed", 0, "seed of the fault schedule and the receiver's failures (0: from the clock; printed either way)")
	fs.Float64Var(&o.rate, "rate", 40, "events published per second")
	fs.IntVar(&o.hookjets, "hookjets", 3, "hookjet processes (2 or 3)")
	fs.IntVar(&o.workers, "workers", 16, "publishing goroutines (each waits for its PubAck)")
	fs.IntVar(&o.maxInFlight, "max-in-flight", 16, "defaults.max_in_flight of every endpoint (the duplicates bound uses it)")
	fs.Float64Var(&o.failRate, "fail-rate", 0.02, "share of requests the receiver answers 503 (retried by hookjet)")
	kinds := fs.String("kinds", joinKinds(), "comma-separated fault kinds to draw from")
	fs.DurationVar(&o.quiet, "quiet", 3*time.Minute, "after the load, how long to wait at most for every delivery")
	fs.StringVar(&o.work, "work", "", "directory for configs, data and logs (default: a new temporary directory, kept)")
	fs.StringVar(&o.hookjetBin, "hookjet", "bin/hookjet", "the hookjet binary (make build)")
	fs.StringVar(&o.natsBin, "nats-server", "bin/nats-server", "the nats-server binary (built from go.mod's module if missing)")
	fs.BoolVar(&o.strict, "strict", false, "also fail when the duplicates that followed one fault exceed max_in_flight at an endpoint (attributed by time)")
	fs.StringVar(&o.sync, "nats-sync", "", "the nodes' jetstream sync_interval (empty: the server's default, 2m; or always, or a duration)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return o, err
		}
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	var err error
	if o.kinds, err = parseKinds(*kinds); err != nil {
		return o, fmt.Errorf("%w: %w", errUsage, err)
	}
	fs.Visit(func(f *flag.Flag) { o.kindsSet = o.kindsSet || f.Name == "kinds" })
	switch {
	case fs.NArg() > 0:
		return o, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	case o.hookjets < 1 || o.hookjets > 9:
		return o, fmt.Errorf("%w: -hookjets %d: want 1..9", errUsage, o.hookjets)
	case o.duration <= 0 || o.rate <= 0 || o.workers < 1 || o.maxInFlight < 1 || o.faults < 0:
		return o, fmt.Errorf("%w: -duration, -rate, -workers and -max-in-flight must be positive, -faults at least 0", errUsage)
	case o.failRate < 0 || o.failRate >= 1:
		return o, fmt.Errorf("%w: -fail-rate %v: want 0 <= rate < 1", errUsage, o.failRate)
	}
	if o.seed == 0 {
		o.seed = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	return o, nil
}

func joinKinds() string {
	s := ""
	for i, k := range allKinds {
		if i > 0 {
			s += ","
		}
		s += k
	}
	return s
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseFlags(args, stdout)
	if err != nil {
		return err
	}
	// Every step is bounded: the whole run cannot outlast this.
	ctx, cancel := context.WithTimeout(ctx, 2*o.duration+o.quiet+10*time.Minute)
	defer cancel()
	s := &soak{o: o, out: stdout}
	defer s.stopAll()
	if err := s.setUp(ctx, stderr); err != nil {
		return err
	}
	return s.campaign(ctx)
}

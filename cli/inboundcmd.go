package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/inbound"
	"github.com/hookjet/hookjet/jetstream"
	"github.com/hookjet/hookjet/server"
)

const inboundHelp = `hookjet inbound test <source> [--wait-consumer NAME] [--config FILE] [--url URL] [--timeout 30s]

Proves the inbound path end to end: builds a synthetic event (type
hookjet.test, id hookjet_test_<random>, body {"id", "type", "object",
"created", "data": {"hookjet_test": true}}), signs it with the source's first
secret the way its provider would (scheme standard, stripe, github, shopify or
hmac), POSTs it to the gateway at inbound.listen (or --url) /in/<source>, and
prints the gateway's answer and when the event was stored in HOOKJET_INBOUND
(stream sequence, subject, Hookjet-Received-At). With --wait-consumer NAME it
then waits until the durable consumer NAME on HOOKJET_INBOUND has acked the
event (its ack floor reaches the event's sequence) and prints when.

It reads the source, inbound.listen and the NATS address and credentials from
--config (or the environment). Exit code 0 when every step happened within
--timeout, 1 otherwise, 2 for a usage or configuration error.`

func runInbound(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprintln(stderr, strings.TrimSpace(inboundHelp))
		return usagef("inbound: want a subcommand: test")
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintln(stdout, strings.TrimSpace(inboundHelp))
		return nil
	}
	if args[0] != "test" {
		return usagef("inbound: unknown subcommand %q (want test)", args[0])
	}
	return runInboundTest(ctx, args[1:], getenv, stdout, stderr)
}

// inboundTestFlags are the flags of `hookjet inbound test`.
type inboundTestFlags struct {
	config, url, consumer string
	timeout               time.Duration
}

// parseInboundTest parses the flags; --help prints to stdout.
func parseInboundTest(args []string, getenv func(string) string, stdout io.Writer) (inboundTestFlags, string, error) {
	fs := flag.NewFlagSet("inbound test", flag.ContinueOnError)
	var f inboundTestFlags
	fs.StringVar(&f.config, "config", getenv("HOOKJET_CONFIG"), "config file: the source, inbound.listen, NATS address and credentials")
	fs.StringVar(&f.url, "url", "", "the gateway's base URL (default http://<inbound.listen>, a wildcard host as 127.0.0.1)")
	fs.StringVar(&f.consumer, "wait-consumer", "", "also wait until this durable consumer on HOOKJET_INBOUND has acked the event")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "how long the whole test may take (sending, storing, the consumer's ack)")
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	pos, err := parseArgs(fs, args, 1)
	if errors.Is(err, errHelp) {
		fmt.Fprintf(stdout, "%s\n\nFlags:\n", strings.TrimSpace(inboundHelp))
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return f, "", err
	}
	if err != nil {
		return f, "", err
	}
	if len(pos) != 1 {
		return f, "", usagef("inbound test: want exactly one source id, e.g. hookjet inbound test stripe")
	}
	return f, pos[0], nil
}

func runInboundTest(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	f, id, err := parseInboundTest(args, getenv, stdout)
	if err != nil {
		return err
	}
	cfg, err := loadClientConfig(f.config, getenv)
	if err != nil {
		return err
	}
	src, i, ok := findSource(cfg, id)
	if !ok {
		return usagef("inbound test: no source %q in inbound.sources", id)
	}
	// Only this source's secrets and the NATS credentials are used.
	if err := cfg.Need("nats", "inbound.sources["+strconv.Itoa(i)+"]"); err != nil {
		return err
	}
	base := f.url
	if base == "" {
		if cfg.Inbound.Listen == "" {
			return usagef("inbound test: inbound.listen is not set (the gateway is off); set it or pass --url")
		}
		base = "http://" + dialable(cfg.Inbound.Listen)
	}
	log := server.NewLogger(cfg.Log, stderr)
	node, err := jetstream.DialClient(cfg.NATS, "hookjet-inbound-test", log)
	if err != nil {
		return err
	}
	defer node.CloseConn(time.Second, log)
	return inboundTest(ctx, node, src, strings.TrimRight(base, "/"), f, stdout)
}

func findSource(cfg *config.Config, id string) (config.InboundSource, int, bool) {
	for i, s := range cfg.Inbound.Sources {
		if s.ID == id {
			return s, i, true
		}
	}
	return config.InboundSource{}, 0, false
}

// dialable turns a listen address into one to connect to: a wildcard host
// becomes 127.0.0.1.
func dialable(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// inboundTest sends the synthetic event and follows it into the stream and,
// with f.consumer, to its consumer's ack.
func inboundTest(ctx context.Context, node *jetstream.Node, src config.InboundSource, base string, f inboundTestFlags, stdout io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, f.timeout)
	defer cancel()
	follow, err := node.FollowInbound(ctx, src.ID)
	if err != nil {
		return err
	}
	if f.consumer != "" { // fail before sending when the consumer does not exist
		if err := node.CheckInboundConsumer(ctx, f.consumer); err != nil {
			return fmt.Errorf("--wait-consumer %s: %w", f.consumer, err)
		}
	}
	sent := time.Now()
	ev, err := inbound.NewTestEvent(src, newTestEventID(), sent)
	if err != nil {
		return err
	}
	if err := postTestEvent(ctx, base+inbound.Prefix+src.ID, ev, stdout); err != nil {
		return err
	}
	stored, err := follow.Find(ctx, ev.ID)
	if err != nil {
		return fmt.Errorf("event %s not seen in %s: %w", ev.ID, jetstream.InboundStream, err)
	}
	fmt.Fprintf(stdout, "stored: %s seq=%d subject=%s received_at=%s (%s after sending)\n",
		jetstream.InboundStream, stored.Seq, stored.Subject, stored.ReceivedAt, time.Since(sent).Round(time.Millisecond))
	if f.consumer == "" {
		return nil
	}
	if err := node.WaitInboundAcked(ctx, f.consumer, stored.Seq); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "acked by consumer %s at %s (%s after sending)\n", f.consumer, time.Now().UTC().Format(time.RFC3339Nano), time.Since(sent).Round(time.Millisecond))
	return nil
}

// newTestEventID is a random id for the synthetic event, hookjet_test_<hex>.
func newTestEventID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program instead)
	return "hookjet_test_" + hex.EncodeToString(b[:])
}

// postTestEvent sends ev and prints the gateway's answer; anything but 2xx
// is an error.
func postTestEvent(ctx context.Context, url string, ev inbound.TestEvent, stdout io.Writer) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(ev.Body))
	if err != nil {
		return usagef("inbound test: %v", err)
	}
	req.Header = ev.Header
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("send to the gateway: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
	}
	_ = json.Unmarshal(raw, &answer)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("gateway answered %s: %s", resp.Status, strings.TrimSpace(answer.Error))
	}
	fmt.Fprintf(stdout, "sent %s to %s: %d %s (%s)\n", ev.ID, url, resp.StatusCode, answer.Status, time.Since(start).Round(time.Microsecond))
	return nil
}

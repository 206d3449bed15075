package natsdest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/signature"
)

// Type is the destination type of this package.
const Type = "nats"

// DefaultTimeout bounds an attempt when the endpoint sets no timeout.
const DefaultTimeout = destination.DefaultBrokerTimeout

// Options are a NATS destination's settings, the endpoint's `destination`
// object.
type Options struct {
	// Type is "nats".
	Type string `json:"type"`
	// URL is the NATS server (nats:// or tls://, several separated by
	// commas); user info in it is a credential. Required.
	URL string `json:"url"`
	// Subject is where each event is published; it may name {type} and
	// {tenant}. Required; never under $, _INBOX. or hookjet.
	Subject string `json:"subject"`
	// JetStream, true when absent, publishes to a stream and counts the
	// delivery once the stream acknowledged it; false publishes with core
	// NATS: at most once, whatever listens at that moment.
	JetStream *bool `json:"jetstream,omitempty"`
	// Creds is a credentials file (JWT and seed); empty means none.
	Creds string `json:"creds,omitempty"`
	// NKey is an nkey seed file; empty means none.
	NKey string `json:"nkey,omitempty"`
	// Token is an authentication token; empty means none.
	Token string `json:"token,omitempty"`
	// User and Password authenticate; empty means none.
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	// TLS configures TLS; absent means none unless the URL is tls://.
	TLS *destination.TLS `json:"tls,omitempty"`
}

// Parse decodes and checks a NATS destination's options; errors name the
// dotted field (destination.subject).
func Parse(raw []byte) (*Options, error) { return destination.ParseOptions[Options](raw) }

// Validate returns every problem of o, each naming its field.
func (o *Options) Validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, errors.New("destination.url: required for a nats destination"))
	}
	for _, s := range strings.Split(o.URL, ",") {
		if o.URL == "" {
			break
		}
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || u.Host == "" {
			errs = append(errs, errors.New("destination.url: not a nats://host:port URL"))
			break
		}
		switch u.Scheme {
		case "nats", "tls":
		default:
			errs = append(errs, fmt.Errorf("destination.url: scheme %q: want nats or tls", u.Scheme))
		}
	}
	if err := CheckSubject(o.Subject); err != nil {
		errs = append(errs, fmt.Errorf("destination.subject: %w", err))
	}
	return errors.Join(errs...)
}

// jetStream reports whether o publishes with JetStream.
func (o *Options) jetStream() bool { return o.JetStream == nil || *o.JetStream }

// CheckSubject refuses an empty subject, one with white space, empty
// tokens or wildcards, and one under $ (the system's), _INBOX. (replies)
// or hookjet. (hookjet's own). {type} and {tenant} are checked as tokens.
func CheckSubject(s string) error {
	if s == "" {
		return errors.New("required for a nats destination")
	}
	if strings.HasPrefix(s, "$") || strings.HasPrefix(s, "_INBOX.") || strings.HasPrefix(s, "hookjet.") || s == "hookjet" || s == "_INBOX" {
		return fmt.Errorf("%q is reserved (subjects under $, _INBOX. and hookjet. are refused)", s)
	}
	for _, tok := range strings.Split(s, ".") {
		switch {
		case tok == "":
			return fmt.Errorf("%q has an empty token", s)
		case tok == "*" || tok == ">":
			return fmt.Errorf("%q has a wildcard: a subject to publish to has none", s)
		case strings.ContainsAny(tok, " \t\r\n"):
			return fmt.Errorf("%q has white space", s)
		}
	}
	return nil
}

// Dialer dials a broker's address; *net.Dialer is one.
type Dialer = destination.Dialer

// Config configures an [Opener].
type Config struct {
	// Dialer dials every connection of operator's endpoints: the SSRF
	// guard's. Nil means a plain net.Dialer (no guard: tests only).
	Dialer Dialer
	// StrictDialer dials those of tenants' endpoints ([destination.Endpoint.Strict]);
	// nil means Dialer.
	StrictDialer Dialer
	// Idle is how long an unused connection stays open; 0 means
	// [destination.DefaultIdle].
	Idle time.Duration
	// Name is the client name the servers see; empty means "hookjet".
	Name string
}

// Opener opens NATS destinations over connections shared per (address,
// credentials, guard).
type Opener struct {
	cfg    Config
	broker *destination.Broker[*conn]
}

// conn is one shared connection and its JetStream context.
type conn struct {
	nc *nats.Conn
	js natsjs.JetStream
}

// New returns an Opener.
func New(cfg Config) *Opener {
	if cfg.Name == "" {
		cfg.Name = "hookjet"
	}
	return &Opener{cfg: cfg, broker: destination.NewBroker(destination.BrokerConfig[*conn]{
		Name: Type, Dialer: cfg.Dialer, StrictDialer: cfg.StrictDialer, Idle: cfg.Idle,
		Close: func(c *conn) { c.nc.Close() }, Classify: Classify,
	})}
}

// Open returns ep's destination; it connects on the first attempt.
func (o *Opener) Open(ep destination.Endpoint) (destination.Destination, error) {
	opts, err := Parse(ep.Options)
	if err != nil {
		return nil, err
	}
	key := sharedKey(opts, ep.Strict)
	return &Destination{o: o, ep: ep.ID, opts: opts, key: key, signer: ep.Signer, strict: ep.Strict, timeout: ep.Timeout}, nil
}

// Conns returns how many connections are open or being dialed.
func (o *Opener) Conns() int { return o.broker.Len() }

// Close closes every connection.
func (o *Opener) Close() { o.broker.Close() }

// sharedKey is what a connection is shared by: the address, every
// credential (hashed: the key is kept in memory, not shown) and the guard.
func sharedKey(o *Options, strict bool) string {
	tlsJSON, _ := json.Marshal(o.TLS)
	return destination.SharedKey(strict, o.URL, o.Creds, o.NKey, o.Token, o.User, o.Password, string(tlsJSON))
}

// dial connects for opts: every address through the guard's dialer,
// servers the cluster advertises ignored.
func (o *Opener) dial(ctx context.Context, opts *Options, strict bool) (*conn, error) {
	d := o.broker.Dialer(strict)
	no := []nats.Option{
		nats.Name(o.cfg.Name),
		nats.SetCustomDialer(ctxDialer{d}),
		nats.IgnoreDiscoveredServers(),
		nats.MaxReconnects(-1),
		// no buffering while reconnecting: an attempt that failed is not
		// sent later behind the engine's back (and out of a key's order)
		nats.ReconnectBufSize(-1),
		nats.RetryOnFailedConnect(false),
	}
	if deadline, ok := ctx.Deadline(); ok {
		no = append(no, nats.Timeout(time.Until(deadline)))
	}
	if opts.Creds != "" {
		no = append(no, nats.UserCredentials(opts.Creds))
	}
	if opts.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(opts.NKey)
		if err != nil {
			return nil, fmt.Errorf("destination.nkey: %w", err)
		}
		no = append(no, opt)
	}
	if opts.Token != "" {
		no = append(no, nats.Token(opts.Token))
	}
	if opts.User != "" || opts.Password != "" {
		no = append(no, nats.UserInfo(opts.User, opts.Password))
	}
	if opts.TLS.On() {
		tc, err := opts.TLS.Config("")
		if err != nil {
			return nil, fmt.Errorf("destination.%w", err)
		}
		no = append(no, nats.Secure(tc))
	}
	nc, err := nats.Connect(opts.URL, no...)
	if err != nil {
		return nil, err
	}
	js, err := natsjs.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &conn{nc: nc, js: js}, nil
}

// ctxDialer makes a Dialer nats.go's CustomDialer.
type ctxDialer struct{ d Dialer }

func (c ctxDialer) Dial(network, address string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.d.DialContext(ctx, network, address)
}

// Destination is one endpoint's NATS destination.
type Destination struct {
	o       *Opener
	ep      string
	opts    *Options
	key     string
	signer  *signature.Signer
	strict  bool
	timeout time.Duration
}

var _ destination.Destination = (*Destination)(nil)

// Send publishes r: with JetStream it waits for the stream's ack, with
// Nats-Msg-Id "<endpoint>:<event id>" ("...:replay-<n>" for the n-th
// replay); without, it flushes the publish to the server.
func (d *Destination) Send(ctx context.Context, r destination.Request) destination.Result {
	ctx, cancel, res := d.o.broker.Attempt(ctx, d.timeout)
	defer cancel()
	sent := res.Sent
	lease, err := d.o.broker.Acquire(ctx, d.key, func(ctx context.Context) (*conn, error) {
		return d.o.dial(ctx, d.opts, d.strict)
	})
	if err != nil {
		return d.o.broker.Fail(res, err)
	}
	defer lease.Release()
	c := lease.Conn()
	msg := nats.NewMsg(destination.Expand(d.opts.Subject, &r))
	msg.Data = r.Payload
	for _, h := range destination.MessageHeaders(d.signer, &r, sent) {
		msg.Header[h.Name] = append(msg.Header[h.Name], h.Value)
	}
	if !d.opts.jetStream() {
		if err := c.nc.PublishMsg(msg); err != nil {
			return d.o.broker.Fail(res, err)
		}
		if err := c.nc.FlushWithContext(ctx); err != nil {
			return d.o.broker.Fail(res, err)
		}
		res.Latency = time.Since(sent)
		res.Response = []byte("published (core NATS, at most once)")
		return res
	}
	ack, err := c.js.PublishMsg(ctx, msg, natsjs.WithMsgID(MsgID(d.ep, r.EventID, r.Replay)))
	if err != nil {
		return d.o.broker.Fail(res, err)
	}
	res.Latency = time.Since(sent)
	res.Response = []byte(Answer(ack))
	return res
}

// MsgID is the Nats-Msg-Id of endpoint's delivery of event: retries share
// it, so that a stream's duplicate window drops them; replays and other
// endpoints' copies do not.
func MsgID(endpoint, event string, replay int) string {
	if replay > 0 {
		return endpoint + ":" + event + ":replay-" + strconv.Itoa(replay)
	}
	return endpoint + ":" + event
}

// Answer is what the delivery log records of a stream's ack.
func Answer(ack *natsjs.PubAck) string {
	s := "stream " + ack.Stream + " seq " + strconv.FormatUint(ack.Sequence, 10)
	if ack.Duplicate {
		s += " (duplicate: stored before)"
	}
	return s
}

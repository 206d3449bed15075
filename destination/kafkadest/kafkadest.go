package kafkadest

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/signature"
)

// Type is the destination type of this package.
const Type = "kafka"

// DefaultTimeout bounds an attempt when the endpoint sets no timeout.
const DefaultTimeout = destination.DefaultBrokerTimeout

// SASL mechanisms.
const (
	MechanismPlain       = "PLAIN"
	MechanismSCRAMSHA256 = "SCRAM-SHA-256"
	MechanismSCRAMSHA512 = "SCRAM-SHA-512"
)

// Options are a Kafka destination's settings, the endpoint's `destination`
// object.
type Options struct {
	// Type is "kafka".
	Type string `json:"type"`
	// Brokers are the seed brokers, host:port. At least one. The client
	// connects to the brokers the cluster advertises too, each through the
	// SSRF guard.
	Brokers []string `json:"brokers"`
	// Topic is where each event is produced; it may name {type} and
	// {tenant}. Required.
	Topic string `json:"topic"`
	// SASL authenticates; absent means none.
	SASL *SASL `json:"sasl,omitempty"`
	// TLS configures TLS; absent means none.
	TLS *destination.TLS `json:"tls,omitempty"`
}

// SASL is a Kafka destination's SASL authentication.
type SASL struct {
	// Mechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string `json:"mechanism"`
	// User and Password are the credentials.
	User     string `json:"user"`
	Password string `json:"password"`
}

// Parse decodes and checks a Kafka destination's options; errors name the
// dotted field (destination.brokers).
func Parse(raw []byte) (*Options, error) { return destination.ParseOptions[Options](raw) }

// Validate returns every problem of o, each naming its field.
func (o *Options) Validate() error {
	var errs []error
	if len(o.Brokers) == 0 {
		errs = append(errs, errors.New("destination.brokers: at least one host:port for a kafka destination"))
	}
	for i, b := range o.Brokers {
		if _, port, err := net.SplitHostPort(b); err != nil || port == "" {
			errs = append(errs, fmt.Errorf("destination.brokers[%d]: %q is not host:port", i, b))
		}
	}
	if err := CheckTopic(o.Topic); err != nil {
		errs = append(errs, fmt.Errorf("destination.topic: %w", err))
	}
	if o.SASL != nil {
		switch o.SASL.Mechanism {
		case MechanismPlain, MechanismSCRAMSHA256, MechanismSCRAMSHA512:
		default:
			errs = append(errs, fmt.Errorf("destination.sasl.mechanism: %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", o.SASL.Mechanism))
		}
		if o.SASL.User == "" {
			errs = append(errs, errors.New("destination.sasl.user: required with sasl"))
		}
	}
	return errors.Join(errs...)
}

// CheckTopic refuses an empty topic and one with characters Kafka refuses
// ([a-zA-Z0-9._-], at most 249), {type} and {tenant} aside.
func CheckTopic(t string) error {
	if t == "" {
		return errors.New("required for a kafka destination")
	}
	bare := strings.NewReplacer("{type}", "", "{tenant}", "").Replace(t)
	if len(bare) > 249 {
		return fmt.Errorf("%q is longer than 249 characters", t)
	}
	for _, c := range bare {
		if !topicChar(c) {
			return fmt.Errorf("%q has %q: a topic has [a-zA-Z0-9._-] only", t, c)
		}
	}
	return nil
}

// Dialer dials a broker's address; *net.Dialer is one.
type Dialer = destination.Dialer

// Config configures an [Opener].
type Config struct {
	// Dialer dials every connection of operators' endpoints: the SSRF
	// guard's. Nil means a plain net.Dialer (no guard: tests only).
	Dialer Dialer
	// StrictDialer dials those of tenants' endpoints; nil means Dialer.
	StrictDialer Dialer
	// Idle is how long an unused client stays open; 0 means
	// [destination.DefaultIdle].
	Idle time.Duration
	// ClientID is the client id brokers see; empty means "hookjet".
	ClientID string
	// Client adds options to every client (tests: kgo.MetadataMinAge).
	Client []kgo.Opt
}

// Opener opens Kafka destinations over clients shared per (brokers,
// credentials, TLS, guard): one client per cluster, whatever the topics.
type Opener struct {
	cfg    Config
	broker *destination.Broker[*client]
}

// New returns an Opener.
func New(cfg Config) *Opener {
	if cfg.ClientID == "" {
		cfg.ClientID = "hookjet"
	}
	return &Opener{cfg: cfg, broker: destination.NewBroker(destination.BrokerConfig[*client]{
		Name: Type, Dialer: cfg.Dialer, StrictDialer: cfg.StrictDialer, Idle: cfg.Idle,
		Close: func(c *client) { c.Close() }, Classify: Classify,
	})}
}

// Open returns ep's destination; the client connects on the first attempt.
func (o *Opener) Open(ep destination.Endpoint) (destination.Destination, error) {
	opts, err := Parse(ep.Options)
	if err != nil {
		return nil, err
	}
	return &Destination{o: o, opts: opts, key: sharedKey(opts, ep.Strict), signer: ep.Signer, strict: ep.Strict, timeout: ep.Timeout}, nil
}

// Clients returns how many clients are open or being made.
func (o *Opener) Clients() int { return o.broker.Len() }

// Close closes every client.
func (o *Opener) Close() { o.broker.Close() }

// sharedKey is what a client is shared by: the brokers (sorted), the
// credentials (hashed), TLS and the guard.
func sharedKey(o *Options, strict bool) string {
	brokers := slices.Clone(o.Brokers)
	slices.Sort(brokers)
	saslJSON, _ := json.Marshal(o.SASL)
	tlsJSON, _ := json.Marshal(o.TLS)
	return destination.SharedKey(strict, strings.Join(brokers, ","), string(saslJSON), string(tlsJSON))
}

// client makes the client of opts: acks from every in-sync replica, the
// idempotent producer (franz-go's default), every broker dialed through
// the guard (TLS on top of the guarded connection).
func (o *Opener) client(opts *Options, strict bool) (*client, error) {
	d := o.broker.Dialer(strict)
	var tc *tls.Config
	if opts.TLS.On() {
		var err error
		if tc, err = opts.TLS.Config(""); err != nil {
			return nil, fmt.Errorf("destination.%w", err)
		}
	}
	dial := func(ctx context.Context, network, host string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, host)
		if err != nil || tc == nil {
			return c, err
		}
		cfg := tc.Clone()
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(host)
		}
		tlsConn := tls.Client(c, cfg)
		if err := tlsConn.HandshakeContext(ctx); err != nil {
			_ = c.Close()
			return nil, err
		}
		return tlsConn, nil
	}
	ko := []kgo.Opt{
		kgo.SeedBrokers(opts.Brokers...),
		kgo.ClientID(o.cfg.ClientID),
		kgo.Dialer(dial),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerLinger(0),
		kgo.UnknownTopicRetries(4),
	}
	if opts.SASL != nil {
		var m sasl.Mechanism
		switch opts.SASL.Mechanism {
		case MechanismPlain:
			m = plain.Auth{User: opts.SASL.User, Pass: opts.SASL.Password}.AsMechanism()
		case MechanismSCRAMSHA256:
			m = scram.Auth{User: opts.SASL.User, Pass: opts.SASL.Password}.AsSha256Mechanism()
		case MechanismSCRAMSHA512:
			m = scram.Auth{User: opts.SASL.User, Pass: opts.SASL.Password}.AsSha512Mechanism()
		}
		ko = append(ko, kgo.SASL(m))
	}
	w := &watch{}
	ko = append(ko, kgo.WithHooks(w), kgo.WithLogger(w))
	ko = append(ko, o.cfg.Client...)
	cl, err := kgo.NewClient(ko...)
	if err != nil {
		return nil, err
	}
	return &client{Client: cl, w: w}, nil
}

// Destination is one endpoint's Kafka destination.
type Destination struct {
	o       *Opener
	opts    *Options
	key     string
	signer  *signature.Signer
	strict  bool
	timeout time.Duration
}

var _ destination.Destination = (*Destination)(nil)

// Send produces r to the topic and waits for every in-sync replica's ack.
// The record's key is the ordering key, else the event id, so that a key's
// records share a partition and keep their order.
func (d *Destination) Send(ctx context.Context, r destination.Request) destination.Result {
	ctx, cancel, res := d.o.broker.Attempt(ctx, d.timeout)
	defer cancel()
	sent := res.Sent
	lease, err := d.o.broker.Acquire(ctx, d.key, func(context.Context) (*client, error) {
		return d.o.client(d.opts, d.strict)
	})
	if err != nil {
		return d.o.broker.Fail(res, err)
	}
	defer lease.Release()
	key := r.OrderingKey
	if key == "" {
		key = r.EventID
	}
	// The payload is copied: the record may outlive the attempt (produce).
	rec := &kgo.Record{Topic: destination.Expand(d.opts.Topic, &r), Key: []byte(key), Value: bytes.Clone(r.Payload)}
	hs := destination.MessageHeaders(d.signer, &r, sent)
	rec.Headers = make([]kgo.RecordHeader, len(hs))
	for i, h := range hs {
		rec.Headers[i] = kgo.RecordHeader{Key: h.Name, Value: []byte(h.Value)}
	}
	cl := lease.Conn()
	answer, err := produce(ctx, cl.Client, rec)
	if err != nil {
		return d.o.broker.Fail(res, cl.explain(err, sent))
	}
	res.Latency = time.Since(sent)
	res.Response = []byte(answer)
	return res
}

// produce produces rec and waits for the cluster's answer until ctx ends.
// franz-go's idempotent producer does not fail a record it may already
// have sent, even when its context ends: after a cluster went away it
// waits for the cluster's return, past any timeout. The attempt ends at
// ctx's end all the same (transient: the engine retries it); the record
// stays in the client's buffer (bounded by kgo.MaxBufferedRecords) and is
// produced if the cluster comes back, a duplicate at worst, which Kafka
// destinations allow (at least once).
func produce(ctx context.Context, cl *kgo.Client, rec *kgo.Record) (string, error) {
	done := make(chan error, 1)
	cl.Produce(ctx, rec, func(_ *kgo.Record, err error) { done <- err })
	select {
	case err := <-done:
		if err != nil {
			return "", err
		}
		return Answer(rec), nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// Answer is what the delivery log records of a produced record.
func Answer(rec *kgo.Record) string {
	return "topic " + rec.Topic + " partition " + strconv.FormatInt(int64(rec.Partition), 10) + " offset " + strconv.FormatInt(rec.Offset, 10)
}

// topicChar reports whether Kafka takes c in a topic name.
func topicChar(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

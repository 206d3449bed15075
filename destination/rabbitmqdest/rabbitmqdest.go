package rabbitmqdest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/hookjet/hookjet/destination"
	"github.com/hookjet/hookjet/signature"
)

// Type is the destination type of this package.
const Type = "rabbitmq"

// DefaultTimeout bounds an attempt when the endpoint sets no timeout.
const DefaultTimeout = destination.DefaultBrokerTimeout

// returnsBuffer is how many returned (unroutable) messages a channel
// buffers between two attempts' reading them.
const returnsBuffer = 256

// Options are a RabbitMQ destination's settings, the endpoint's
// `destination` object.
type Options struct {
	// Type is "rabbitmq".
	Type string `json:"type"`
	// URL is the broker, amqp:// or amqps://, with the credentials and the
	// virtual host (amqp://user:password@host:5672/vhost). Required; its
	// user info is shown as amqp://***@host/.
	URL string `json:"url"`
	// Exchange is the exchange published to; empty means the default
	// exchange (the routing key names a queue).
	Exchange string `json:"exchange"`
	// RoutingKey is each message's routing key; it may name {type} and
	// {tenant}. Empty means the event type.
	RoutingKey string `json:"routing_key"`
	// TLS configures amqps://; absent means the system's roots.
	TLS *destination.TLS `json:"tls,omitempty"`
}

// Parse decodes and checks a RabbitMQ destination's options; errors name
// the dotted field (destination.url).
func Parse(raw []byte) (*Options, error) { return destination.ParseOptions[Options](raw) }

// Validate returns every problem of o, each naming its field.
func (o *Options) Validate() error {
	var errs []error
	if o.URL == "" {
		errs = append(errs, errors.New("destination.url: required for a rabbitmq destination"))
	} else if _, err := amqp.ParseURI(o.URL); err != nil {
		errs = append(errs, fmt.Errorf("destination.url: %s: not an amqp:// or amqps:// URL", Masked(o.URL)))
	}
	if len(o.Exchange) > 255 {
		errs = append(errs, errors.New("destination.exchange: longer than 255 bytes"))
	}
	if len(o.RoutingKey) > 255 {
		errs = append(errs, errors.New("destination.routing_key: longer than 255 bytes"))
	}
	return errors.Join(errs...)
}

// Masked returns u with its user info replaced by ***: amqp://***@host/vhost.
func Masked(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "[invalid URL]"
	}
	if p.User == nil {
		return u
	}
	p.User = nil
	s := p.String()
	return strings.Replace(s, "://", "://***@", 1)
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
	// Idle is how long an unused connection, and an endpoint's unused
	// channel, stay open; 0 means [destination.DefaultIdle].
	Idle time.Duration
	// Name is the connection name the broker shows; empty means "hookjet".
	Name string
}

// Opener opens RabbitMQ destinations over connections shared per (URL,
// TLS, guard), with one channel per endpoint, so that one endpoint's
// channel error (an exchange that does not exist) never closes another's.
type Opener struct {
	cfg    Config
	broker *destination.Broker[*amqp.Connection]
}

// New returns an Opener.
func New(cfg Config) *Opener {
	if cfg.Idle <= 0 {
		cfg.Idle = destination.DefaultIdle
	}
	if cfg.Name == "" {
		cfg.Name = "hookjet"
	}
	return &Opener{cfg: cfg, broker: destination.NewBroker(destination.BrokerConfig[*amqp.Connection]{
		Name: Type, Dialer: cfg.Dialer, StrictDialer: cfg.StrictDialer, Idle: cfg.Idle,
		Close: func(c *amqp.Connection) { _ = c.Close() }, Classify: Classify,
	})}
}

// Open returns ep's destination; it connects on the first attempt.
func (o *Opener) Open(ep destination.Endpoint) (destination.Destination, error) {
	opts, err := Parse(ep.Options)
	if err != nil {
		return nil, err
	}
	return &Destination{o: o, opts: opts, key: sharedKey(opts, ep.Strict), signer: ep.Signer, strict: ep.Strict, timeout: ep.Timeout}, nil
}

// Conns returns how many connections are open or being dialed.
func (o *Opener) Conns() int { return o.broker.Len() }

// Close closes every connection.
func (o *Opener) Close() { o.broker.Close() }

func sharedKey(o *Options, strict bool) string {
	tlsJSON, _ := json.Marshal(o.TLS)
	return destination.SharedKey(strict, o.URL, string(tlsJSON))
}

// dial connects for opts through the guard's dialer.
func (o *Opener) dial(ctx context.Context, opts *Options, strict bool) (*amqp.Connection, error) {
	d := o.broker.Dialer(strict)
	cfg := amqp.Config{
		Heartbeat:  10 * time.Second,
		Properties: amqp.NewConnectionProperties(),
		Dial: func(network, addr string) (net.Conn, error) {
			return d.DialContext(ctx, network, addr)
		},
	}
	cfg.Properties.SetClientConnectionName(o.cfg.Name)
	if strings.HasPrefix(opts.URL, "amqps://") {
		t := opts.TLS
		if t == nil {
			t = &destination.TLS{Enabled: true}
		}
		tc, err := t.Config("")
		if err != nil {
			return nil, fmt.Errorf("destination.%w", err)
		}
		cfg.TLSClientConfig = tc
	}
	return amqp.DialConfig(opts.URL, cfg)
}

// Destination is one endpoint's RabbitMQ destination, with its channel.
type Destination struct {
	o       *Opener
	opts    *Options
	key     string
	signer  *signature.Signer
	strict  bool
	timeout time.Duration

	mu sync.Mutex
	ch *channel // nil until the first attempt, and after it closed
}

var _ destination.Destination = (*Destination)(nil)

// channel is an endpoint's channel in confirm mode on a shared connection.
type channel struct {
	lease   *destination.Lease[*amqp.Connection]
	ch      *amqp.Channel
	closes  chan *amqp.Error
	returns chan amqp.Return
	blocked chan amqp.Blocking

	mu        sync.Mutex
	closeErr  *amqp.Error
	returned  map[string]amqp.Return // by message id
	blockedBy string                 // the broker's reason while it blocks publishing
	users     int
	gen       uint64
	timer     *time.Timer
	done      bool
}

// Send publishes r on the endpoint's channel, mandatory (an unroutable
// message comes back and is a failure) and persistent, and waits for the
// broker's confirm.
func (d *Destination) Send(ctx context.Context, r destination.Request) destination.Result {
	ctx, cancel, res := d.o.broker.Attempt(ctx, d.timeout)
	defer cancel()
	sent := res.Sent
	c, err := d.channel(ctx)
	if err != nil {
		return d.o.broker.Fail(res, err)
	}
	defer d.release(c)
	hs := destination.MessageHeaders(d.signer, &r, sent)
	table := make(amqp.Table, len(hs))
	for _, h := range hs {
		table[h.Name] = h.Value
	}
	ct := r.ContentType
	if ct == "" {
		ct = "application/json"
	}
	key := d.opts.RoutingKey
	if key == "" {
		key = "{type}"
	}
	key = destination.Expand(key, &r)
	dc, err := c.ch.PublishWithDeferredConfirmWithContext(ctx, d.opts.Exchange, key, true, false, amqp.Publishing{
		Headers:      table,
		ContentType:  ct,
		DeliveryMode: amqp.Persistent,
		MessageId:    r.EventID,
		Timestamp:    sent,
		Type:         r.EventType,
		Body:         r.Payload,
	})
	if err != nil {
		return d.o.broker.Fail(res, c.why(err))
	}
	ok, err := dc.WaitContext(ctx)
	if err != nil {
		return d.o.broker.Fail(res, c.why(err))
	}
	if !ok {
		return d.o.broker.Fail(res, c.why(ErrNacked))
	}
	if ret, ok := c.returnOf(r.EventID); ok {
		return d.o.broker.Fail(res, &ReturnedError{Code: int(ret.ReplyCode), Text: ret.ReplyText, Exchange: ret.Exchange, Key: ret.RoutingKey})
	}
	res.Latency = time.Since(sent)
	res.Response = []byte("confirmed by the broker: exchange " + strconv.Quote(d.opts.Exchange) + " routing key " + strconv.Quote(key) + " delivery tag " + strconv.FormatUint(dc.DeliveryTag, 10))
	return res
}

// channel returns the endpoint's open channel, opening it (and dialing the
// shared connection) when there is none, and counts the attempt as a user.
func (d *Destination) channel(ctx context.Context) (*channel, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c := d.ch; c != nil {
		c.mu.Lock()
		if !c.done && !c.ch.IsClosed() {
			c.users++
			c.gen++
			if c.timer != nil {
				c.timer.Stop()
				c.timer = nil
			}
			c.mu.Unlock()
			return c, nil
		}
		c.mu.Unlock()
		d.ch = nil
	}
	lease, err := d.o.broker.Acquire(ctx, d.key, func(ctx context.Context) (*amqp.Connection, error) {
		return d.o.dial(ctx, d.opts, d.strict)
	})
	if err != nil {
		return nil, err
	}
	conn := lease.Conn()
	ch, err := conn.Channel()
	if err != nil {
		if conn.IsClosed() {
			lease.Discard()
		}
		lease.Release()
		return nil, err
	}
	if err := ch.Confirm(false); err != nil {
		_ = ch.Close()
		lease.Release()
		return nil, err
	}
	c := &channel{
		lease:    lease,
		ch:       ch,
		closes:   ch.NotifyClose(make(chan *amqp.Error, 1)),
		returns:  ch.NotifyReturn(make(chan amqp.Return, returnsBuffer)),
		blocked:  conn.NotifyBlocked(make(chan amqp.Blocking, 4)),
		returned: map[string]amqp.Return{},
		users:    1,
	}
	d.ch = c
	return c, nil
}

// release ends an attempt's use of c; the last user starts its idle timer,
// which closes the channel and ends its lease of the connection.
func (d *Destination) release(c *channel) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drainLocked()
	c.users--
	if c.users > 0 || c.done {
		return
	}
	if c.closeErr != nil || c.ch.IsClosed() {
		c.closeLocked()
		return
	}
	gen := c.gen
	c.timer = time.AfterFunc(d.o.cfg.Idle, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.users == 0 && c.gen == gen && !c.done {
			c.closeLocked()
		}
	})
}

// closeLocked closes the channel and ends its lease.
func (c *channel) closeLocked() {
	c.done = true
	_ = c.ch.Close()
	if c.lease.Conn().IsClosed() {
		c.lease.Discard()
	}
	c.lease.Release()
}

// drainLocked takes what the broker sent about the channel: returned
// messages, its close, and the connection's blocking.
func (c *channel) drainLocked() {
	for {
		select {
		case r, ok := <-c.returns:
			if !ok {
				c.returns = nil
				continue
			}
			c.returned[r.MessageId] = r
		case e, ok := <-c.closes:
			if !ok {
				c.closes = nil
				continue
			}
			if e != nil && c.closeErr == nil {
				c.closeErr = e
			}
		case b, ok := <-c.blocked:
			if !ok {
				c.blocked = nil
				continue
			}
			c.blockedBy = ""
			if b.Active {
				c.blockedBy = b.Reason
			}
		default:
			return
		}
	}
}

// returnOf takes the returned message of id, if the broker returned it.
func (c *channel) returnOf(id string) (amqp.Return, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drainLocked()
	r, ok := c.returned[id]
	delete(c.returned, id)
	return r, ok
}

// why explains a failed publish by the channel's close or the broker's
// blocking, when there was one.
func (c *channel) why(err error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drainLocked()
	switch {
	case c.closeErr != nil:
		return c.closeErr
	case c.blockedBy != "" && errors.Is(err, context.DeadlineExceeded):
		return &BlockedError{Reason: c.blockedBy}
	}
	return err
}

package destination

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"time"
)

// DefaultBrokerTimeout bounds a broker attempt when the endpoint sets no
// timeout.
const DefaultBrokerTimeout = 15 * time.Second

// Dialer dials a broker's address; *net.Dialer is one, and so is the SSRF
// guard's.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// BrokerConfig configures a [Broker].
type BrokerConfig[C any] struct {
	// Name is the broker type ("nats"), the prefix of a failure's reason.
	Name string
	// Dialer dials the connections of operators' endpoints: the SSRF
	// guard's. Nil means a plain net.Dialer (no guard: tests only).
	Dialer Dialer
	// StrictDialer dials those of tenants' endpoints ([Endpoint].Strict);
	// nil means Dialer.
	StrictDialer Dialer
	// Idle is how long an unused connection stays open; 0 means
	// [DefaultIdle].
	Idle time.Duration
	// Close closes a connection.
	Close func(C)
	// Classify says what a failed attempt's error means.
	Classify func(error) (Class, time.Duration)
}

// Broker is what every broker type's opener shares: the guard's dialers,
// its connections shared per key (the address and credentials) and closed
// when idle, an attempt's deadline and how a failed attempt is reported.
// It is safe for concurrent use.
type Broker[C any] struct {
	cfg   BrokerConfig[C]
	conns *Shared[C]
}

// NewBroker returns a Broker with no connection.
func NewBroker[C any](cfg BrokerConfig[C]) *Broker[C] {
	if cfg.Dialer == nil {
		cfg.Dialer = &net.Dialer{Timeout: 5 * time.Second}
	}
	if cfg.StrictDialer == nil {
		cfg.StrictDialer = cfg.Dialer
	}
	return &Broker[C]{cfg: cfg, conns: NewShared(cfg.Idle, cfg.Close)}
}

// Dialer returns the dialer of an endpoint: the strict guard's for a
// tenant's.
func (b *Broker[C]) Dialer(strict bool) Dialer {
	if strict {
		return b.cfg.StrictDialer
	}
	return b.cfg.Dialer
}

// Acquire leases the connection of key, dialing it with dial when there is
// none ([Shared.Acquire]).
func (b *Broker[C]) Acquire(ctx context.Context, key string, dial func(context.Context) (C, error)) (*Lease[C], error) {
	return b.conns.Acquire(ctx, key, dial)
}

// Len returns how many connections are open or being dialed.
func (b *Broker[C]) Len() int { return b.conns.Len() }

// Close closes every connection; Acquire fails afterwards.
func (b *Broker[C]) Close() { b.conns.Close() }

// Attempt starts an attempt: ctx bounded by timeout (DefaultBrokerTimeout
// when not positive), and the result with its send time.
func (b *Broker[C]) Attempt(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc, Result) {
	if timeout <= 0 {
		timeout = DefaultBrokerTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, cancel, Result{Sent: time.Now()}
}

// Fail completes res for err: its latency, class and wait, the error, and
// a reason naming the broker type ("nats: ...").
func (b *Broker[C]) Fail(res Result, err error) Result {
	res.Latency = time.Since(res.Sent)
	res.Class, res.RetryAfter = b.cfg.Classify(err)
	res.Err = err
	res.Reason = b.cfg.Name + ": " + err.Error()
	return res
}

// ParseOptions decodes a broker destination's options (the JSON object
// under the endpoint's destination) into a T and returns it with what its
// Validate finds; errors name the dotted field (destination.subject).
func ParseOptions[T any, P interface {
	*T
	Validate() error
}](raw []byte) (*T, error) {
	var o T
	if err := json.Unmarshal(raw, &o); err != nil {
		return nil, fmt.Errorf("destination: %w", err)
	}
	return &o, P(&o).Validate()
}

// SharedKey is what a connection is shared by: parts (the address and
// every credential, hashed, so that the key kept in memory shows none of
// them) and whether the strict guard dials it.
func SharedKey(strict bool, parts ...string) string {
	h := sha256.New()
	for _, s := range append(parts, strconv.FormatBool(strict)) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

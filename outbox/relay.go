package outbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/hookjet/hookjet/config"
)

// Backoff bounds while PostgreSQL or NATS is down.
const (
	minBackoff = 100 * time.Millisecond
	maxBackoff = 5 * time.Second
	// batchTimeout bounds one batch, PubAcks included; it is also how long
	// a shutdown waits for the batch in flight.
	batchTimeout = 30 * time.Second
	// lagEvery is how often the lag is measured.
	lagEvery = time.Second
	// downLogEvery repeats the warning while a side stays down.
	downLogEvery = 30 * time.Second
)

// Relay moves committed outbox rows into JetStream. Create it with [New] and
// run it with [Relay.Run]; [Relay.Ready] and [Relay.Lag] may be called from
// any goroutine.
type Relay struct {
	conn       *pgx.ConnConfig
	table      table
	batch      int
	poll       time.Duration
	maxPayload int
	pub        Publisher
	log        *slog.Logger
	reg        prometheus.Registerer
	m          *metrics

	deleteSQL, lagSQL string

	hold time.Duration // WithHold; 0: delete rows at their PubAck
	held holdState

	// cols: the optional columns the table has (columns.go). Only the Run
	// goroutine uses it.
	cols columns

	mu    sync.Mutex
	down  map[error]*downState // ErrPostgres, ErrNATS -> why and since when
	lag   time.Duration
	lagAt time.Time
}

type downState struct {
	err    error
	since  time.Time
	logged time.Time
}

// Option configures a Relay.
type Option func(*Relay)

// WithLogger sets the logger; the default discards.
func WithLogger(l *slog.Logger) Option { return func(r *Relay) { r.log = l } }

// WithRegisterer registers the relay's metrics (hookjet_outbox_*) with reg;
// by default they are not registered.
func WithRegisterer(reg prometheus.Registerer) Option {
	return func(r *Relay) { r.reg = reg }
}

// New returns a relay for cfg (outbox.dsn must be set) publishing through
// pub. maxPayload is security.max_payload_bytes: larger payloads are
// rejected. It does not connect yet.
func New(cfg config.Outbox, maxPayload int, pub Publisher, opts ...Option) (*Relay, error) {
	cc, err := parseDSN(cfg.DSN)
	if err != nil {
		return nil, err
	}
	t, err := newTable(cfg.Table)
	if err != nil {
		return nil, fmt.Errorf("%w: outbox.table: %w", config.ErrInvalid, err)
	}
	if cfg.Batch < 1 || cfg.Poll <= 0 {
		return nil, fmt.Errorf("%w: outbox.batch and outbox.poll must be positive", config.ErrInvalid)
	}
	r := &Relay{
		conn: cc, table: t, batch: cfg.Batch, poll: cfg.Poll, maxPayload: maxPayload, pub: pub,
		log:       slog.New(slog.DiscardHandler),
		deleteSQL: "DELETE FROM " + t.quoted + " WHERE id = ANY($1)",
		lagSQL:    "SELECT coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 FROM " + t.quoted,
		down:      map[error]*downState{ErrPostgres: {err: errors.New("not connected yet"), since: time.Now()}},
	}
	for _, o := range opts {
		o(r)
	}
	if r.hold > 0 {
		r.held = holdState{acked: map[string]time.Time{}}
	}
	if r.m, err = newMetrics(r.reg); err != nil {
		return nil, fmt.Errorf("outbox metrics: %w", err)
	}
	return r, nil
}

// Run relays rows until ctx is done, then finishes the batch in flight
// (within 30 s) and closes its PostgreSQL connection. It returns nil after
// ctx is done: failures of PostgreSQL or NATS are retried with backoff,
// logged, and reported by [Relay.Ready], never returned.
func (r *Relay) Run(ctx context.Context) error {
	var conn *pgx.Conn
	defer func() { r.closeConn(ctx, conn) }()
	backoff := minBackoff
	for ctx.Err() == nil {
		if conn == nil {
			c, err := r.connect(ctx)
			if err != nil {
				r.setDown(ErrPostgres, err)
				backoff = r.sleep(ctx, backoff)
				continue
			}
			conn = c
		}
		n, err := r.relayBatch(ctx, conn)
		// pgx buffers every NOTIFY it reads while running a query: drop
		// them whatever happened, or full batches and outages pile them up.
		drainNotifications(conn)
		if err == nil {
			r.setUp(ErrNATS)
		}
		if err == nil || !errors.Is(err, ErrPostgres) {
			// The lag keeps moving while NATS is down: that is when
			// it matters.
			if lerr := r.measureLag(ctx, conn); err == nil {
				err = lerr
			}
		}
		if err == nil {
			r.setUp(ErrPostgres)
			backoff = minBackoff
			if n == r.batch {
				continue // more rows are waiting
			}
			err = r.wait(ctx, conn)
		}
		if err != nil && ctx.Err() == nil {
			side := ErrNATS
			if errors.Is(err, ErrPostgres) {
				side = ErrPostgres
				r.closeConn(ctx, conn)
				conn = nil
			}
			r.setDown(side, err)
			backoff = r.sleep(ctx, backoff)
		}
	}
	return nil
}

// connect opens the relay's connection and listens on the table's channel.
func (r *Relay) connect(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(cctx, r.conn)
	if err != nil {
		return nil, fmt.Errorf("%w: connect: %w", ErrPostgres, err)
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{r.table.channel}.Sanitize()); err != nil {
		r.closeConn(ctx, conn)
		return nil, fmt.Errorf("%w: listen: %w", ErrPostgres, err)
	}
	if err := r.detectColumns(cctx, conn); err != nil {
		r.closeConn(ctx, conn)
		return nil, err
	}
	return conn, nil
}

func (r *Relay) closeConn(ctx context.Context, conn *pgx.Conn) {
	if conn == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	if err := conn.Close(cctx); err != nil {
		r.log.Debug("outbox: close postgresql connection", "err", err)
	}
}

// wait blocks until a NOTIFY arrives, outbox.poll passes or ctx is done.
// Notifications that arrived meanwhile are consumed, so that a burst of
// inserts costs one wake-up.
func (r *Relay) wait(ctx context.Context, conn *pgx.Conn) error {
	wctx, cancel := context.WithTimeout(ctx, r.poll)
	defer cancel()
	if _, err := conn.WaitForNotification(wctx); err != nil {
		if wctx.Err() != nil {
			return nil // polled, or shutting down
		}
		return fmt.Errorf("%w: wait for notification: %w", ErrPostgres, err)
	}
	drainNotifications(conn)
	return nil
}

// drainNotifications drops the notifications conn has already buffered.
func drainNotifications(conn *pgx.Conn) {
	done, stop := context.WithCancel(context.Background())
	stop()
	for {
		// With a done context this returns only what is already buffered.
		if n, err := conn.WaitForNotification(done); err != nil || n == nil {
			return
		}
	}
}

// sleep waits out a jittered backoff (or ctx) and returns the next one.
func (r *Relay) sleep(ctx context.Context, d time.Duration) time.Duration {
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
	return min(2*d, maxBackoff)
}

// measureLag updates the age of the oldest row at most once per lagEvery.
func (r *Relay) measureLag(ctx context.Context, conn *pgx.Conn) error {
	r.mu.Lock()
	due := time.Since(r.lagAt) >= lagEvery
	r.mu.Unlock()
	if !due {
		return nil
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var secs float64
	if err := conn.QueryRow(qctx, r.lagSQL).Scan(&secs); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("%w: lag: %w", ErrPostgres, err)
	}
	secs = max(secs, 0)
	r.m.lag.Set(secs)
	r.mu.Lock()
	r.lag, r.lagAt = time.Duration(secs*float64(time.Second)), time.Now()
	r.mu.Unlock()
	return nil
}

// Lag is the age of the oldest row in the table when last measured (at most
// about a second ago while the relay runs); 0 when the table was empty.
func (r *Relay) Lag() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lag
}

// Ready returns nil while the relay works, or an error wrapping
// [ErrPostgres] and/or [ErrNATS] saying what is down, why and since when.
// Before the first connection it reports PostgreSQL as not connected yet.
func (r *Relay) Ready() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var errs []error
	for _, side := range []error{ErrPostgres, ErrNATS} {
		if d := r.down[side]; d != nil {
			errs = append(errs, fmt.Errorf("%w since %s: %w", side, d.since.UTC().Format(time.RFC3339), d.err))
		}
	}
	return errors.Join(errs...)
}

// setDown records that side (ErrPostgres or ErrNATS) failed with err and
// logs it when it goes down, then every downLogEvery.
func (r *Relay) setDown(side, err error) {
	now := time.Now()
	r.mu.Lock()
	d := r.down[side]
	if d == nil {
		d = &downState{since: now}
		r.down[side] = d
	}
	d.err = err
	logIt := now.Sub(d.logged) >= downLogEvery
	if logIt {
		d.logged = now
	}
	since := d.since
	r.mu.Unlock()
	if logIt {
		r.log.Warn("outbox relay: "+side.Error()+"; retrying with backoff", "err", err, "down_for", now.Sub(since).Round(time.Millisecond))
	} else {
		r.log.Debug("outbox relay: still failing", "err", err)
	}
}

// setUp records that side works (again).
func (r *Relay) setUp(side error) {
	r.mu.Lock()
	d := r.down[side]
	delete(r.down, side)
	r.mu.Unlock()
	if d != nil && !d.logged.IsZero() {
		r.log.Info("outbox relay: "+sideName(side)+" available again", "down_for", time.Since(d.since).Round(time.Millisecond))
	}
}

func sideName(side error) string {
	if errors.Is(side, ErrNATS) {
		return "nats"
	}
	return "postgresql"
}

// CheckDSN reports whether dsn (outbox.dsn) is a PostgreSQL connection
// string; the error, which wraps [config.ErrInvalid], never shows it.
func CheckDSN(dsn config.Secret) error {
	_, err := parseDSN(dsn)
	return err
}

func parseDSN(dsn config.Secret) (*pgx.ConnConfig, error) {
	if dsn.IsZero() {
		return nil, fmt.Errorf("%w: outbox.dsn: required to run the outbox relay", config.ErrInvalid)
	}
	cc, err := pgx.ParseConfig(dsn.Reveal())
	if err != nil {
		// The cause is not wrapped: a parse error may quote the DSN, password
		// included.
		return nil, fmt.Errorf("%w: outbox.dsn: not a valid PostgreSQL connection string (not shown: it may hold a password)", config.ErrInvalid)
	}
	// A relay cut off between its PubAcks and COMMIT would otherwise keep
	// its claimed rows locked until TCP keepalive noticed (hours), and
	// republish them long after JetStream's duplicate window. The DSN may
	// set its own value.
	if _, ok := cc.RuntimeParams["idle_in_transaction_session_timeout"]; !ok {
		cc.RuntimeParams["idle_in_transaction_session_timeout"] = "60000"
	}
	return cc, nil
}

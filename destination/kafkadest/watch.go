package kafkadest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// client is a shared client and the last connection error it saw: franz-go
// retries a refused dial or a failed SASL handshake until the record's
// context ends, so an attempt that times out says why with it.
type client struct {
	*kgo.Client
	w *watch
}

// watch records a client's connection errors (kgo.HookBrokerConnect, and
// the SASL failures franz-go reports only to its logger).
type watch struct {
	mu  sync.Mutex
	err error
	at  time.Time
}

var _ kgo.HookBrokerConnect = (*watch)(nil)

func (w *watch) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		w.note(err)
	}
}

func (w *watch) Level() kgo.LogLevel { return kgo.LogLevelError }

func (w *watch) Log(_ kgo.LogLevel, msg string, keyvals ...any) {
	for i := 0; i+1 < len(keyvals); i += 2 {
		if k, ok := keyvals[i].(string); ok && k == "err" {
			if err, ok := keyvals[i+1].(error); ok {
				if strings.Contains(msg, "sasl") {
					err = fmt.Errorf("%w: %w", ErrSASL, err)
				}
				w.note(err)
			}
		}
	}
}

func (w *watch) note(err error) {
	w.mu.Lock()
	w.err, w.at = err, time.Now()
	w.mu.Unlock()
}

// since returns the last error seen at or after t, nil if none.
func (w *watch) since(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil || w.at.Before(t) {
		return nil
	}
	return w.err
}

// explain replaces a timed-out produce's error with the connection error
// that kept it from being sent, when there was one during the attempt.
func (c *client) explain(err error, sent time.Time) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if cause := c.w.since(sent); cause != nil {
		return cause
	}
	return err
}

package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// attemptState is what hookjet knows about the attempts of one message for one
// endpoint. It lives in the KV bucket HOOKJET_ATTEMPTS so that every hookjet
// process handling a redelivery sees the same count; it is written only when an
// attempt fails, never on the success path.
type attemptState struct {
	V            int       `json:"v"`
	Attempts     int       `json:"attempts"`
	First        time.Time `json:"first"`
	Last         time.Time `json:"last"`
	Status       int       `json:"status,omitempty"`
	Error        string    `json:"error,omitempty"`
	DeadLettered string    `json:"dead_lettered,omitempty"` // reason, once the DLQ copy is stored
}

// attemptKey names a message's attempt state: the endpoint and the
// message's key (its stream sequence; "r" and the sequence for replays).
func attemptKey(endpoint, key string) string {
	return endpoint + "." + key
}

func (d *Dispatcher) loadAttempts(ctx context.Context, endpoint, key string) (attemptState, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	e, err := d.attempts.Get(ctx, attemptKey(endpoint, key))
	if errors.Is(err, natsjs.ErrKeyNotFound) {
		return attemptState{}, nil
	}
	if err != nil {
		return attemptState{}, fmt.Errorf("load attempt state: %w", err)
	}
	var st attemptState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return attemptState{}, fmt.Errorf("decode attempt state %s: %w", e.Key(), err)
	}
	return st, nil
}

func (d *Dispatcher) saveAttempts(ctx context.Context, endpoint, key string, st attemptState) error {
	st.V = 1
	b, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode attempt state: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := d.attempts.Put(ctx, attemptKey(endpoint, key), b); err != nil {
		return fmt.Errorf("save attempt state: %w", err)
	}
	return nil
}

// forgetAttempts purges a settled message's attempt state. It publishes the
// KV purge marker without waiting for the server (it runs on the ledger's
// commit goroutine); if it is lost, the bucket's TTL removes the entry.
func (d *Dispatcher) forgetAttempts(endpoint, key string) {
	m := nats.NewMsg("$KV." + AttemptsBucket + "." + attemptKey(endpoint, key))
	m.Header.Set("KV-Operation", "PURGE")
	m.Header.Set("Nats-Rollup", "sub")
	if err := d.o.NC.PublishMsg(m); err != nil {
		d.log.Debug("purge attempt state", "endpoint", endpoint, "key", key, "err", err)
	}
}

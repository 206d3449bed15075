package kvdedupe

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/webhook"
)

// DefaultLease is how long a claim lasts without being marked processed or
// released: after a replica crashed mid-way, another may take the id then.
const DefaultLease = 5 * time.Minute

// Values of a key.
const (
	pending   = "pending"
	processed = "processed"
)

// ErrNotMarked is returned (wrapped) when the handler succeeded but the id
// could not be marked processed: the effect happened, so acknowledge the
// message; a redelivery within the lease gets [webhook.ErrInProgress], one
// after it would be processed again.
var ErrNotMarked = errors.New("kvdedupe: handler succeeded but the id was not marked processed")

// BucketConfig is a bucket for the store: ids are remembered for ttl (the
// sender's retry horizon, e.g. 24h), with per-key TTLs enabled for leases.
func BucketConfig(bucket string, ttl time.Duration) natsjs.KeyValueConfig {
	return natsjs.KeyValueConfig{
		Bucket:         bucket,
		Description:    "processed webhook ids (webhook/kvdedupe)",
		TTL:            ttl,
		Storage:        natsjs.FileStorage,
		LimitMarkerTTL: time.Minute,
		MaxBytes:       1 << 30,
	}
}

// Store is a [webhook.Store] in a KV bucket. It is safe for concurrent use.
type Store struct {
	kv    natsjs.KeyValue
	lease time.Duration
}

// Option configures a Store.
type Option func(*Store)

// WithLease sets how long a claim lasts before another replica may take the
// id (default DefaultLease). Make it longer than the handler ever takes.
func WithLease(d time.Duration) Option { return func(s *Store) { s.lease = d } }

// New returns a Store over kv (a bucket made with [BucketConfig]).
func New(kv natsjs.KeyValue, opts ...Option) *Store {
	s := &Store{kv: kv, lease: DefaultLease}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Key is the bucket key of id.
func Key(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:16])
}

// Once implements [webhook.Store].
func (s *Store) Once(ctx context.Context, id string, fn func(ctx context.Context) error) (bool, error) {
	key := Key(id)
	rev, err := s.kv.Create(ctx, key, []byte(pending), natsjs.KeyTTL(s.lease))
	if errors.Is(err, natsjs.ErrKeyExists) {
		e, gerr := s.kv.Get(ctx, key)
		switch {
		case gerr == nil && string(e.Value()) == processed:
			return true, nil
		case gerr == nil:
			return false, webhook.ErrInProgress
		case errors.Is(gerr, natsjs.ErrKeyNotFound):
			// Released or expired since: take it now.
			rev, err = s.kv.Create(ctx, key, []byte(pending), natsjs.KeyTTL(s.lease))
		default:
			return false, fmt.Errorf("kvdedupe: read %s: %w", key, gerr)
		}
	}
	if errors.Is(err, natsjs.ErrKeyExists) {
		return false, webhook.ErrInProgress
	}
	if err != nil {
		return false, fmt.Errorf("kvdedupe: claim: %w", err)
	}
	if ferr := fn(ctx); ferr != nil {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if derr := s.kv.Delete(dctx, key, natsjs.LastRevision(rev)); derr != nil {
			// The claim's lease ends it anyway.
			return false, errors.Join(ferr, fmt.Errorf("kvdedupe: release (the claim lapses after its lease): %w", derr))
		}
		return false, ferr
	}
	uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := s.kv.Update(uctx, key, []byte(processed), rev); err != nil {
		return false, fmt.Errorf("%w: %w", ErrNotMarked, err)
	}
	return false, nil
}

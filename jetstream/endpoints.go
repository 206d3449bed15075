package jetstream

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/endpoints"
	"github.com/hookjet/hookjet/seal"
)

// endpointRecordVersion is the version of EndpointRecord's JSON form.
const endpointRecordVersion = 1

// EndpointRecord and SealedSecret are the stored form of an API endpoint
// (package endpoints), which the store reads and writes.
type (
	EndpointRecord = endpoints.Record
	SealedSecret   = endpoints.SealedSecret
)

// EndpointStore keeps the endpoints created through the admin API in the KV
// bucket HOOKJET_ENDPOINTS, shared by every hookjet process on the same
// NATS. It is safe for concurrent use.
type EndpointStore struct {
	bucket, description string
	kv                  natsjs.KeyValue
	js                  natsjs.JetStream
	digestKey           []byte // keys Digest, derived from the secret key
	box                 *seal.Box
	log                 *slog.Logger
	now                 func() time.Time
}

// StoreOption configures an EndpointStore.
type StoreOption func(*EndpointStore)

// StoreLogger sets the store's logger; the default discards.
func StoreLogger(l *slog.Logger) StoreOption { return func(s *EndpointStore) { s.log = l } }

// StoreBucket keeps the endpoints in another bucket than HOOKJET_ENDPOINTS
// (the shared definitions of config-file endpoints).
func StoreBucket(name, description string) StoreOption {
	return func(s *EndpointStore) { s.bucket, s.description = name, description }
}

// StoreClock sets the clock that decides which rotated-out secrets have
// expired; the default is time.Now.
func StoreClock(now func() time.Time) StoreOption { return func(s *EndpointStore) { s.now = now } }

// endpointBucketConfig is HOOKJET_ENDPOINTS' configuration: one revision per
// key, values bounded (a definition comes from a body of at most 64 KiB),
// room for far more than 100,000 endpoints.
func endpointBucketConfig(replicas int) natsjs.KeyValueConfig {
	return natsjs.KeyValueConfig{
		Bucket:       EndpointBucket,
		Description:  "hookjet endpoints created through the admin API, by id (secrets and header values sealed)",
		History:      1,
		Storage:      natsjs.FileStorage,
		Replicas:     replicas,
		MaxValueSize: 256 << 10,
		MaxBytes:     2 << 30,
	}
}

// OpenEndpointStore creates or updates the bucket and returns the store.
// key is the 32-byte secret key (see seal.LoadSecretKey).
func OpenEndpointStore(ctx context.Context, js natsjs.JetStream, key []byte, replicas int, opts ...StoreOption) (*EndpointStore, error) {
	box, err := seal.New(key)
	if err != nil {
		return nil, fmt.Errorf("endpoint store: %w", err)
	}
	s := &EndpointStore{box: box, js: js, log: slog.New(slog.DiscardHandler), now: time.Now, bucket: EndpointBucket}
	for _, o := range opts {
		o(s)
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(digestContext))
	s.digestKey = mac.Sum(nil)
	kc := endpointBucketConfig(replicas)
	if s.bucket != EndpointBucket {
		kc.Bucket, kc.Description = s.bucket, s.description
	}
	// A cluster that has just started can refuse a placement for a
	// moment (no suitable peers): retried like the streams.
	if err := retry(ctx, s.log, "bucket "+s.bucket, func(ctx context.Context) (err error) {
		s.kv, err = js.CreateOrUpdateKeyValue(ctx, kc)
		return err
	}); err != nil {
		return nil, err
	}
	return s, nil
}

// secretsContext is the sealing context of an endpoint's signing secrets.
func secretsContext(id string) []byte { return []byte(id + "/secrets") }

// headerContext is the sealing context of one header value.
func headerContext(id, name string) []byte { return []byte(id + "/headers/" + name) }

// authContext and proxyContext are the sealing contexts of an endpoint's
// auth and proxy.
func authContext(id string) []byte  { return []byte(id + "/auth") }
func proxyContext(id string) []byte { return []byte(id + "/proxy") }

// Record seals spec into a record. CreatedAt and UpdatedAt are left zero.
func (s *EndpointStore) Record(spec config.EndpointSpec) EndpointRecord {
	rec := EndpointRecord{
		V:                  endpointRecordVersion,
		ID:                 spec.ID,
		URL:                spec.URL,
		Events:             slices.Clone(spec.Events),
		Tenant:             spec.Tenant,
		Description:        spec.Description,
		Owner:              spec.Owner,
		Filter:             spec.Filter,
		Transform:          spec.Transform,
		InsecureSkipVerify: spec.InsecureSkipVerify,
		Overrides:          spec.Overrides,
		Secrets:            make([]SealedSecret, len(spec.Secrets)),
	}
	for i, sec := range spec.Secrets {
		rec.Secrets[i].Sealed = s.box.Seal([]byte(sec.Reveal()), secretsContext(spec.ID))
		if i < len(spec.SecretExpiry) && !spec.SecretExpiry[i].IsZero() {
			t := spec.SecretExpiry[i].UTC()
			rec.Secrets[i].Expires = &t
		}
	}
	if spec.Headers != nil {
		rec.Headers = make(map[string][]byte, len(spec.Headers))
		for name, v := range spec.Headers {
			rec.Headers[name] = s.box.Seal([]byte(v.Reveal()), headerContext(spec.ID, name))
		}
	}
	if dest, creds := endpoints.StoredDestination(spec.Destination); dest != nil {
		plain, err := json.Marshal(creds)
		if err != nil {
			panic("jetstream: destination credentials: " + err.Error()) // strings only
		}
		dest.Credentials = s.box.Seal(plain, destinationContext(spec.ID))
		rec.Destination = dest
	}
	if !spec.Auth.IsZero() {
		rec.Auth = s.box.Seal(spec.Auth.SealedForm(), authContext(spec.ID))
	}
	if spec.Proxy != "" {
		rec.Proxy = s.box.Seal([]byte(spec.Proxy), proxyContext(spec.ID))
	}
	return rec
}

// destinationContext is the sealing context of a destination's credentials.
func destinationContext(id string) []byte { return []byte(id + "/destination") }

// Spec opens rec into the definition it was built from, every secret
// included. Errors wrap [seal.ErrOpen] (wrong secret_key, or a value
// changed or moved) and name the field, never a value.
func (s *EndpointStore) Spec(rec EndpointRecord) (config.EndpointSpec, error) {
	spec := config.EndpointSpec{
		ID:                 rec.ID,
		URL:                rec.URL,
		Events:             slices.Clone(rec.Events),
		Tenant:             rec.Tenant,
		Description:        rec.Description,
		Owner:              rec.Owner,
		Filter:             rec.Filter,
		Transform:          rec.Transform,
		InsecureSkipVerify: rec.InsecureSkipVerify,
		Overrides:          rec.Overrides,
		Secrets:            make([]config.Secret, len(rec.Secrets)),
		SecretExpiry:       make([]time.Time, len(rec.Secrets)),
	}
	for i, sec := range rec.Secrets {
		plain, err := s.box.Open(sec.Sealed, secretsContext(rec.ID))
		if err != nil {
			return config.EndpointSpec{}, fmt.Errorf("endpoint %s: secrets[%d]: %w", rec.ID, i, err)
		}
		spec.Secrets[i] = config.NewSecret(string(plain))
		if sec.Expires != nil {
			spec.SecretExpiry[i] = *sec.Expires
		}
	}
	if rec.Headers != nil {
		spec.Headers = make(map[string]config.Secret, len(rec.Headers))
		for name, sealed := range rec.Headers {
			plain, err := s.box.Open(sealed, headerContext(rec.ID, name))
			if err != nil {
				return config.EndpointSpec{}, fmt.Errorf("endpoint %s: headers.%s: %w", rec.ID, name, err)
			}
			spec.Headers[name] = config.NewSecret(string(plain))
		}
	}
	if rec.Destination != nil {
		var creds endpoints.Credentials
		if rec.Destination.Credentials != nil {
			plain, err := s.box.Open(rec.Destination.Credentials, destinationContext(rec.ID))
			if err != nil {
				return config.EndpointSpec{}, fmt.Errorf("endpoint %s: destination: %w", rec.ID, err)
			}
			if err := json.Unmarshal(plain, &creds); err != nil {
				return config.EndpointSpec{}, fmt.Errorf("endpoint %s: destination: %w", rec.ID, err)
			}
		}
		spec.Destination = rec.Destination.Config(creds)
	}
	if rec.Auth != nil {
		plain, err := s.box.Open(rec.Auth, authContext(rec.ID))
		if err == nil {
			spec.Auth, err = config.OpenAuth(plain)
		}
		if err != nil {
			return config.EndpointSpec{}, fmt.Errorf("endpoint %s: auth: %w", rec.ID, err)
		}
	}
	if rec.Proxy != nil {
		plain, err := s.box.Open(rec.Proxy, proxyContext(rec.ID))
		if err != nil {
			return config.EndpointSpec{}, fmt.Errorf("endpoint %s: proxy: %w", rec.ID, err)
		}
		spec.Proxy = string(plain)
	}
	return spec, nil
}

// Resolve turns rec into the endpoint the engine delivers to: secrets
// opened, rotated-out secrets whose grace has ended dropped, defaults
// applied field by field under the record's overrides, Source "api",
// CreatedAt and UpdatedAt from the record. SecretExpiry tells the caller
// when to resolve again (a secret expires).
func (s *EndpointStore) Resolve(rec EndpointRecord, defaults config.Settings) (config.Endpoint, error) {
	spec, err := s.Spec(rec)
	if err != nil {
		return config.Endpoint{}, err
	}
	spec = endpoints.DropExpiredSecrets(spec, s.now())
	ep, err := config.ResolveEndpoint(defaults, spec)
	if err != nil {
		return config.Endpoint{}, fmt.Errorf("endpoint %s: %w", rec.ID, err)
	}
	ep.Source = config.SourceAPI
	ep.CreatedAt, ep.UpdatedAt = rec.CreatedAt, rec.UpdatedAt
	return ep, nil
}

// decodeRecord decodes a KV value, reporting false for a value that is not
// an endpoint definition (no url: a disabled state of the first design).
func decodeRecord(e natsjs.KeyValueEntry) (EndpointRecord, bool, error) {
	return decodeValue(e.Key(), e.Revision(), e.Value())
}

// decodeValue decodes the value stored under id at revision rev.
func decodeValue(id string, rev uint64, value []byte) (EndpointRecord, bool, error) {
	var rec EndpointRecord
	if err := json.Unmarshal(value, &rec); err != nil {
		return EndpointRecord{}, false, fmt.Errorf("endpoint %s: %w", id, err)
	}
	if rec.URL == "" && rec.Destination == nil {
		return EndpointRecord{}, false, nil
	}
	rec.ID = id
	rec.Revision = rev
	return rec, true, nil
}

// Create stores a new record under rec.ID. It returns an error wrapping
// [api.ErrEndpointExists] when an endpoint has that id; a leftover value that
// is not an endpoint is replaced.
func (s *EndpointStore) Create(ctx context.Context, rec EndpointRecord) error {
	rec.V = endpointRecordVersion
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("endpoint %s: %w", rec.ID, err)
	}
	_, err = s.kv.Create(ctx, rec.ID, b)
	if errors.Is(err, natsjs.ErrKeyExists) {
		e, gerr := s.kv.Get(ctx, rec.ID)
		if gerr != nil {
			return fmt.Errorf("endpoint %s: %w", rec.ID, gerr)
		}
		if _, ok, _ := decodeRecord(e); ok {
			return fmt.Errorf("%w: %q", api.ErrEndpointExists, rec.ID)
		}
		s.log.Debug("replacing a value that is not an endpoint", "bucket", EndpointBucket, "key", rec.ID)
		_, err = s.kv.Update(ctx, rec.ID, b, e.Revision())
		if errors.Is(err, natsjs.ErrKeyRevisionMismatch) {
			return fmt.Errorf("%w: %q", api.ErrEndpointExists, rec.ID)
		}
	}
	if err != nil {
		return fmt.Errorf("create endpoint %s: %w", rec.ID, err)
	}
	return nil
}

// Get returns the record stored under id, or an error wrapping
// [api.ErrUnknownEndpoint].
func (s *EndpointStore) Get(ctx context.Context, id string) (EndpointRecord, error) {
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, natsjs.ErrKeyNotFound) || errors.Is(err, natsjs.ErrInvalidKey) {
		return EndpointRecord{}, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	if err != nil {
		return EndpointRecord{}, fmt.Errorf("endpoint %s: %w", id, err)
	}
	rec, ok, err := decodeRecord(e)
	if err != nil {
		return EndpointRecord{}, err
	}
	if !ok {
		return EndpointRecord{}, fmt.Errorf("%w: %q", api.ErrUnknownEndpoint, id)
	}
	return rec, nil
}

// maxUpdateTries bounds the compare-and-set retries of Update.
const maxUpdateTries = 10

// Update reads the record under id, lets fn change it, and writes it back
// only if nobody changed it meanwhile, retrying fn on a conflict. When fn
// returns an error nothing is written and that error is returned. The
// record written, with its new revision, is returned.
func (s *EndpointStore) Update(ctx context.Context, id string, fn func(*EndpointRecord) error) (EndpointRecord, error) {
	for range maxUpdateTries {
		rec, err := s.Get(ctx, id)
		if err != nil {
			return EndpointRecord{}, err
		}
		rev := rec.Revision
		if err := fn(&rec); err != nil {
			return EndpointRecord{}, err
		}
		rec.ID, rec.V = id, endpointRecordVersion
		b, err := json.Marshal(rec)
		if err != nil {
			return EndpointRecord{}, fmt.Errorf("endpoint %s: %w", id, err)
		}
		rec.Revision, err = s.kv.Update(ctx, id, b, rev)
		if errors.Is(err, natsjs.ErrKeyRevisionMismatch) {
			continue
		}
		if err != nil {
			return EndpointRecord{}, fmt.Errorf("update endpoint %s: %w", id, err)
		}
		return rec, nil
	}
	return EndpointRecord{}, fmt.Errorf("update endpoint %s: %w", id, api.ErrConflict)
}

// Delete removes the record under id, or returns an error wrapping
// [api.ErrUnknownEndpoint].
func (s *EndpointStore) Delete(ctx context.Context, id string) error {
	rec, err := s.Get(ctx, id)
	if err != nil {
		return err
	}
	err = s.kv.Delete(ctx, id, natsjs.LastRevision(rec.Revision))
	if errors.Is(err, natsjs.ErrKeyRevisionMismatch) {
		return s.Delete(ctx, id) // changed meanwhile: delete what is there now
	}
	if err != nil {
		return fmt.Errorf("delete endpoint %s: %w", id, err)
	}
	return nil
}

// Put stores rec whatever is there; a config file's owner uses it.
func (s *EndpointStore) Put(ctx context.Context, rec EndpointRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode endpoint %s: %w", rec.ID, err)
	}
	if _, err := s.kv.Put(ctx, rec.ID, b); err != nil {
		return fmt.Errorf("store endpoint %s: %w", rec.ID, err)
	}
	return nil
}

// Count returns an upper bound of the number of stored endpoints that is
// cheap to get (the bucket's message count, delete markers included), or
// the exact number when exact is set (which reads every key).
func (s *EndpointStore) Count(ctx context.Context, exact bool) (int, error) {
	if !exact {
		st, err := s.kv.Status(ctx)
		if err != nil {
			return 0, fmt.Errorf("bucket %s: %w", EndpointBucket, err)
		}
		return int(st.Values()), nil
	}
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		return 0, fmt.Errorf("bucket %s: %w", EndpointBucket, err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	return n, nil
}

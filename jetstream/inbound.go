package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/inbound"
)

// Names of the inbound gateway's stream, bucket, subjects and headers.
const (
	// InboundStream stores the webhooks the gateway accepted.
	InboundStream = "HOOKJET_INBOUND"
	// InboundPrefix starts every subject of InboundStream:
	// hookjet.inbound.<source>.<type>.
	InboundPrefix = "hookjet.inbound."
	// InboundSeenBucket remembers the provider ids already stored, for
	// dedupe.ttl, past the stream's duplicate window.
	InboundSeenBucket = "HOOKJET_INBOUND_SEEN"
	HdrInboundSource  = "Hookjet-Inbound-Source"
	HdrInboundID      = "Hookjet-Inbound-Id"
	HdrReceivedAt     = "Hookjet-Received-At"
	// UntypedEvent is the type of an inbound event whose provider names none.
	UntypedEvent = "untyped"
)

// InboundHeadroom is what an inbound message carries besides its body (the
// Hookjet-Inbound-* headers, the id, Content-Type).
const InboundHeadroom = 8 << 10

// maxInboundType bounds the type part of an inbound subject.
const maxInboundType = 255

// InboundMaxMsgSize is the largest message HOOKJET_INBOUND takes: a body of
// inbound.max_body_bytes with its headers.
func InboundMaxMsgSize(cfg *config.Config) int32 {
	return int32(cfg.Inbound.MaxBodyBytes) + InboundHeadroom
}

// InboundStreamConfig is HOOKJET_INBOUND: limits retention for
// streams.max_age and streams.max_bytes, Discard: New (a full stream refuses,
// the gateway answers 503 and the provider retries), Nats-Msg-Id dedupe
// within streams.duplicate_window.
func InboundStreamConfig(cfg *config.Config) natsjs.StreamConfig {
	s := cfg.Streams
	return natsjs.StreamConfig{
		Name:        InboundStream,
		Description: "hookjet inbound gateway: verified webhooks from providers, by source and type",
		Subjects:    []string{InboundPrefix + ">"},
		Retention:   natsjs.LimitsPolicy,
		Storage:     natsjs.FileStorage,
		Replicas:    s.Replicas,
		Duplicates:  s.DuplicateWindow,
		MaxAge:      s.MaxAge,
		MaxBytes:    s.MaxBytes,
		MaxMsgSize:  InboundMaxMsgSize(cfg),
		Discard:     natsjs.DiscardNew,
	}
}

// InboundSeenConfig is HOOKJET_INBOUND_SEEN: one key per stored provider id,
// expiring after dedupe.ttl.
func InboundSeenConfig(cfg *config.Config) natsjs.KeyValueConfig {
	return natsjs.KeyValueConfig{
		Bucket:      InboundSeenBucket,
		Description: "hookjet inbound gateway: provider ids already stored (dedupe past the duplicate window)",
		TTL:         cfg.Dedupe.TTL,
		Storage:     natsjs.FileStorage,
		Replicas:    cfg.Streams.Replicas,
		MaxBytes:    1 << 30,
	}
}

// EnsureInbound creates or updates HOOKJET_INBOUND and
// HOOKJET_INBOUND_SEEN, retrying like [EnsureStreams].
func EnsureInbound(ctx context.Context, js natsjs.JetStream, cfg *config.Config, log *slog.Logger) error {
	sc := InboundStreamConfig(cfg)
	if err := retry(ctx, log, "stream "+sc.Name, func(ctx context.Context) error { return ensureStream(ctx, js, sc) }); err != nil {
		return err
	}
	kc := InboundSeenConfig(cfg)
	return retry(ctx, log, "bucket "+kc.Bucket, func(ctx context.Context) error {
		if kv, err := js.KeyValue(ctx, kc.Bucket); err == nil {
			if st, err := kv.Status(ctx); err == nil && st.TTL() == kc.TTL {
				return nil
			}
		}
		_, err := js.CreateOrUpdateKeyValue(ctx, kc)
		return err
	})
}

// InboundSubject is the subject of an event of type typ from source:
// hookjet.inbound.<source>.<type>, with the type made of valid subject
// tokens (see [SanitizeType]).
func InboundSubject(source, typ string) string {
	return InboundPrefix + source + "." + SanitizeType(typ)
}

// SanitizeType turns a provider's event type into subject tokens: dots
// separate tokens ("payment_intent.succeeded" stays as it is), every byte
// other than A-Z, a-z, 0-9, '_' and '-' becomes '_', an empty token becomes
// '_', the result is cut at 255 bytes, and an empty type is [UntypedEvent].
func SanitizeType(typ string) string {
	if typ == "" {
		return UntypedEvent
	}
	if len(typ) > maxInboundType {
		typ = typ[:maxInboundType]
	}
	if cleanType(typ) {
		return typ
	}
	b := make([]byte, 0, len(typ)+2)
	prevDot := true // an empty first token
	for i := range len(typ) {
		c := typ[i]
		switch {
		case c == '.':
			if prevDot {
				b = append(b, '_')
			}
			b = append(b, '.')
			prevDot = true
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b = append(b, c)
		default:
			b = append(b, '_')
		}
		prevDot = false
	}
	if prevDot {
		b = append(b, '_')
	}
	return string(b)
}

// cleanType reports whether typ needs no sanitising.
func cleanType(typ string) bool {
	prevDot := true
	for i := range len(typ) {
		c := typ[i]
		switch {
		case c == '.':
			if prevDot {
				return false
			}
			prevDot = true
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
		default:
			return false
		}
		prevDot = false
	}
	return !prevDot
}

// InboundMsgID is the Nats-Msg-Id of an inbound event: <source>:<id>.
func InboundMsgID(source, id string) string { return source + ":" + id }

// inboundSeenKey is the HOOKJET_INBOUND_SEEN key of an event:
// <source>.<first 128 bits of SHA-256(<source>:<id>) in hex>, a valid key
// whatever the id holds.
func inboundSeenKey(source, id string) string {
	sum := sha256.Sum256([]byte(InboundMsgID(source, id)))
	return source + "." + hex.EncodeToString(sum[:16])
}

// InboundEvent and InboundStored are the gateway's (package inbound):
// InboundStore implements [inbound.Store].
type (
	InboundEvent  = inbound.Event
	InboundStored = inbound.Stored
)

// InboundStore stores inbound events exactly once per provider id for
// dedupe.ttl: HOOKJET_INBOUND_SEEN is consulted first, the event is
// published with Nats-Msg-Id <source>:<id> (JetStream's dedupe within the
// window), and only once the PubAck says it is stored is its id marked, so
// that a failed store never leaves an id marked and the provider's retry is
// stored. It is safe for concurrent use.
type InboundStore struct {
	js      natsjs.JetStream
	marks   natsjs.JetStream // asynchronous publishes of the marks
	kv      natsjs.KeyValue
	timeout time.Duration
	log     *slog.Logger
}

// OpenInboundStore opens the store over the stream and bucket
// [EnsureInbound] created. timeout bounds each JetStream call (a
// non-positive one means 2s), so that an unavailable JetStream is answered
// quickly.
func OpenInboundStore(ctx context.Context, js natsjs.JetStream, timeout time.Duration, log *slog.Logger) (*InboundStore, error) {
	kv, err := js.KeyValue(ctx, InboundSeenBucket)
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", InboundSeenBucket, err)
	}
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	marks, err := natsjs.New(js.Conn(),
		natsjs.WithPublishAsyncMaxPending(4096),
		natsjs.WithPublishAsyncTimeout(timeout),
		natsjs.WithPublishAsyncErrHandler(func(_ natsjs.JetStream, m *nats.Msg, err error) {
			// Stored, not marked: within the duplicate window Nats-Msg-Id
			// still catches a copy, whose store marks it again.
			log.Warn("inbound event stored but not marked in "+InboundSeenBucket+": a copy sent again after the duplicate window would be stored twice",
				"key", strings.TrimPrefix(m.Subject, inboundSeenPrefix), "err", err)
		}))
	if err != nil {
		return nil, err
	}
	return &InboundStore{js: js, marks: marks, kv: kv, timeout: timeout, log: log}, nil
}

// inboundSeenPrefix is the subject prefix of HOOKJET_INBOUND_SEEN's keys.
const inboundSeenPrefix = "$KV." + InboundSeenBucket + "."

// Flush waits until every mark published so far is stored, or ctx ends.
func (s *InboundStore) Flush(ctx context.Context) error {
	select {
	case <-s.marks.PublishAsyncComplete():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%d marks of %s not acknowledged: %w", s.marks.PublishAsyncPending(), InboundSeenBucket, ctx.Err())
	}
}

// Store stores ev unless its id was stored before. An error means it may
// not be stored: the gateway answers 503 and the provider retries.
func (s *InboundStore) Store(ctx context.Context, ev InboundEvent) (InboundStored, error) {
	dedupe := ev.DedupeID
	if dedupe == "" {
		dedupe = ev.ID
	}
	key := inboundSeenKey(ev.Source, dedupe)
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	e, err := s.kv.Get(cctx, key)
	switch {
	case err == nil:
		seq, _ := strconv.ParseUint(string(e.Value()), 10, 64)
		return InboundStored{Seq: seq, Duplicate: true}, nil
	case !errors.Is(err, natsjs.ErrKeyNotFound):
		return InboundStored{}, fmt.Errorf("look up %s: %w", InboundSeenBucket, err)
	}
	m := &nats.Msg{Subject: InboundSubject(ev.Source, ev.Type), Header: make(nats.Header, 5), Data: ev.Body}
	m.Header[HdrMsgID] = []string{InboundMsgID(ev.Source, ev.ID)}
	m.Header[HdrInboundSource] = []string{ev.Source}
	m.Header[HdrInboundID] = []string{ev.ID}
	m.Header[HdrReceivedAt] = []string{ev.ReceivedAt.UTC().Format(time.RFC3339Nano)}
	ct := ev.ContentType
	if ct == "" {
		ct = "application/json"
	}
	m.Header[HdrContentType] = []string{ct}
	ack, err := s.js.PublishMsg(cctx, m)
	if err != nil {
		return InboundStored{}, fmt.Errorf("store in %s: %w", InboundStream, err)
	}
	// Marked after the PubAck, for a duplicate too (the mark of the first
	// copy may have failed), without waiting: until the mark is stored,
	// Nats-Msg-Id catches a copy within the duplicate window.
	mark := &nats.Msg{Subject: inboundSeenPrefix + key, Data: strconv.AppendUint(nil, ack.Sequence, 10)}
	if _, err := s.marks.PublishMsgAsync(mark, natsjs.WithStallWait(s.timeout)); err != nil {
		s.log.Warn("inbound event stored but not marked in "+InboundSeenBucket+": a copy sent again after the duplicate window would be stored twice",
			"source", ev.Source, "seq", ack.Sequence, "err", err)
	}
	return InboundStored{Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

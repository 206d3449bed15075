package jetstream

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"sync"
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
	InboundPrefix    = "hookjet.inbound."
	HdrInboundSource = "Hookjet-Inbound-Source"
	HdrInboundID     = "Hookjet-Inbound-Id"
	HdrReceivedAt    = "Hookjet-Received-At"
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

// EnsureInbound creates or updates HOOKJET_INBOUND, retrying like
// [EnsureStreams] (which creates HOOKJET_SEEN, where the stored ids are
// remembered).
func EnsureInbound(ctx context.Context, js natsjs.JetStream, cfg *config.Config, log *slog.Logger) error {
	sc := InboundStreamConfig(cfg)
	return retry(ctx, log, "stream "+sc.Name, func(ctx context.Context) error { return noRoom(cfg, ensureStream(ctx, js, sc)) })
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

// inboundSeenKey names an inbound event by source and provider id:
// <source>.<first 128 bits of SHA-256(<source>:<id>) in hex>, bounded and
// of subject-safe bytes whatever the id holds.
func inboundSeenKey(source, id string) string {
	sum := sha256.Sum256([]byte(InboundMsgID(source, id)))
	return source + "." + hex.EncodeToString(sum[:16])
}

// inboundLedgerKey is the dedupe ledger's key of an inbound event (and what
// hookjet.seen.inbound announces): "\x00in." and its inboundSeenKey, apart
// from every event id of the fan-out (none starts with a NUL byte).
func inboundLedgerKey(source, id string) string { return "\x00in." + inboundSeenKey(source, id) }

// InboundEvent and InboundStored are the gateway's (package inbound):
// InboundStore implements [inbound.Store].
type (
	InboundEvent  = inbound.Event
	InboundStored = inbound.Stored
)

// InboundStore stores inbound events exactly once per provider id for
// dedupe.ttl: the local dedupe ledger is consulted first (every process
// follows the ids every other one stored, HOOKJET_SEEN, into its own), the
// event is published with Nats-Msg-Id <source>:<id> (JetStream's dedupe
// within the window, which also covers the moments an id takes to reach the
// other processes), and only once the PubAck says it is stored is its id
// remembered and announced, so that a failed store never leaves an id
// marked and the provider's retry is stored. No lookup makes a round trip.
// It is safe for concurrent use.
type InboundStore struct {
	js      natsjs.JetStream
	seen    *SeenIDs
	timeout time.Duration
	log     *slog.Logger

	// failed holds the Nats-Msg-Ids of stores answered with an error
	// that may have been stored all the same (a publish the client sent
	// again after reconnecting, a PubAck lost): the provider was told
	// the event was not stored, so its retry is accepted, not a
	// duplicate. Bounded: at most failedMax ids (past that the expired
	// ones go, then any).
	mu     sync.Mutex
	failed map[string]time.Time
}

// failedMax bounds InboundStore.failed; failedFor is how long an id stays.
const (
	failedMax = 10_000
	failedFor = 10 * time.Minute
)

// OpenInboundStore opens the store over the stream [EnsureInbound]
// created, remembering ids in seen. timeout bounds each JetStream call (a
// non-positive one means 2s), so that an unavailable JetStream is answered
// quickly.
func OpenInboundStore(js natsjs.JetStream, seen *SeenIDs, timeout time.Duration, log *slog.Logger) *InboundStore {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &InboundStore{js: js, seen: seen, timeout: timeout, log: log, failed: map[string]time.Time{}}
}

// Flush waits until every id announced so far is stored in HOOKJET_SEEN, or
// ctx ends.
func (s *InboundStore) Flush(ctx context.Context) error { return s.seen.Flush(ctx) }

// Store stores ev unless its id was stored before. An error means it may
// not be stored: the gateway answers 503 and the provider retries.
func (s *InboundStore) Store(ctx context.Context, ev InboundEvent) (InboundStored, error) {
	dedupe := ev.DedupeID
	if dedupe == "" {
		dedupe = ev.ID
	}
	key := inboundLedgerKey(ev.Source, dedupe)
	if seq, found, err := s.seen.Seen(key); err != nil {
		return InboundStored{}, fmt.Errorf("look up the dedupe ledger: %w", err)
	} else if found {
		return InboundStored{Seq: seq, Duplicate: true}, nil
	}
	if !s.js.Conn().IsConnected() {
		// A publish while reconnecting would wait in the client's
		// reconnect buffer and be stored after the 503, making the
		// provider's retry a duplicate of an event it was told was not
		// stored: refuse before publishing.
		return InboundStored{}, fmt.Errorf("store in %s: not connected to NATS", InboundStream)
	}
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
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
	msgID := m.Header[HdrMsgID][0]
	ack, err := s.js.PublishMsg(cctx, m)
	if err != nil {
		s.noteFailed(msgID)
		return InboundStored{}, fmt.Errorf("store in %s: %w", InboundStream, err)
	}
	duplicate := ack.Duplicate && !s.takeFailed(msgID)
	// Remembered after the PubAck, for a duplicate too (the first copy's
	// announcement may have been lost), without waiting: until the
	// announcement is followed, Nats-Msg-Id catches a copy within the
	// duplicate window.
	if err := s.seen.Remember(key, ack.Sequence); err != nil {
		s.log.Warn("inbound event stored but not remembered in the dedupe ledger", "source", ev.Source, "seq", ack.Sequence, "err", err)
	}
	s.seen.Announce(SeenInbound, key, ack.Sequence)
	return InboundStored{Seq: ack.Sequence, Duplicate: duplicate}, nil
}

// noteFailed remembers that the store of msgID was answered with an error.
func (s *InboundStore) noteFailed(msgID string) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.failed) >= failedMax {
		for id, at := range s.failed {
			if now.Sub(at) > failedFor || len(s.failed) >= failedMax {
				delete(s.failed, id)
			}
		}
	}
	s.failed[msgID] = now
}

// takeFailed reports whether the store of msgID was answered with an error
// within failedFor, and forgets it.
func (s *InboundStore) takeFailed(msgID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.failed[msgID]
	delete(s.failed, msgID)
	return ok && time.Since(at) <= failedFor
}

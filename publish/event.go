package publish

import (
	"crypto/rand"
	"encoding/base32"
	"errors"
	"fmt"
	"strings"

	"github.com/hookjet/hookjet/config"
)

// Headers an event carries in HOOKJET_EVENTS, and a publish request on
// hookjet.publish.<type> names.
const (
	// HeaderID is the event id, the webhook-id its endpoints see.
	HeaderID = "Nats-Msg-Id"
	// HeaderTenant names the event's tenant (config.CheckTenant).
	HeaderTenant = "Hookjet-Tenant"
	// HeaderKey is the event's ordering key (at most [MaxKeyLen] bytes).
	HeaderKey = "Hookjet-Ordering-Key"
)

// Limits of one event and one request.
const (
	// MaxBatch is the most events one request may carry and one atomic
	// batch holds: nats-server's default max_batch_size.
	MaxBatch = 1000
	// MaxIDLen bounds an event id, which travels in NATS and HTTP headers.
	MaxIDLen = 255
	// MaxKeyLen bounds an ordering key.
	MaxKeyLen = 255
)

// Event is one event to store.
type Event struct {
	// ID is the event id (Nats-Msg-Id); the committer never sees an empty
	// one (the handlers generate one with [NewID]).
	ID string
	// Type is the event type: the subject is hookjet.events.<Type>.
	Type string
	// Data is the payload, delivered as the webhook's body.
	Data []byte
	// Tenant is the event's tenant; empty: none.
	Tenant string
	// Key is the event's ordering key; empty: none.
	Key string
	// Header holds further headers stored with the event (Content-Type,
	// traceparent); nil: none.
	Header map[string][]string
}

// Result is what became of one event.
type Result struct {
	// Stream and Seq say where the event is stored (for a duplicate: where
	// the first copy is).
	Stream string
	Seq    uint64
	// Duplicate is set when an event with the same id was stored before
	// (within the stream's duplicate window, or remembered by the
	// committer's ledger); this one was not stored.
	Duplicate bool
	// Err is why the event was not stored; nil when it was (or was a
	// duplicate).
	Err error
}

// Problem is one bad field of a request.
type Problem struct {
	Field string `json:"field"`
	Error string `json:"error"`
	// large marks a payload too large to store (HTTP 413).
	large bool
}

// NewID returns a random event id: evt_ and 26 base32 characters (128 bits).
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return "evt_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:]))
}

// CheckID checks an event id: 1..255 bytes without white space or control
// characters (it becomes a NATS and an HTTP header value).
func CheckID(id string) error {
	switch {
	case id == "":
		return errors.New("is empty")
	case len(id) > MaxIDLen:
		return fmt.Errorf("must be at most %d bytes, got %d", MaxIDLen, len(id))
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("contains white space or control characters")
	}
	return nil
}

// CheckKey checks an ordering key: 1..255 bytes without control
// characters (it becomes a NATS and an HTTP header value).
func CheckKey(k string) error {
	switch {
	case k == "":
		return errors.New("is empty")
	case len(k) > MaxKeyLen:
		return fmt.Errorf("must be at most %d bytes, got %d", MaxKeyLen, len(k))
	case strings.ContainsFunc(k, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return errors.New("contains control characters")
	case strings.TrimSpace(k) != k:
		return errors.New("starts or ends with white space")
	}
	return nil
}

// KeyOf is the ordering key a stored event's headers carry (HeaderKey, in
// any case; the first value), or "" when they carry none or one that
// [CheckKey] refuses: such an event is not ordered. Tasks and dead letters
// carry their event's key on under HeaderKey.
func KeyOf(h map[string][]string) string {
	v := h[HeaderKey]
	if len(v) == 0 {
		for k, vals := range h {
			if len(k) == len(HeaderKey) && strings.EqualFold(k, HeaderKey) && len(vals) > 0 {
				v = vals
				break
			}
		}
	}
	if len(v) == 0 || CheckKey(v[0]) != nil {
		return ""
	}
	return v[0]
}

// check returns the problems of e, each field named under prefix ("" or
// "events[3]."). e.ID is checked when not empty; maxData bounds the
// payload (0: no bound).
func check(e *Event, prefix string, maxData int) []Problem {
	var out []Problem
	add := func(field string, err error) {
		out = append(out, Problem{Field: prefix + field, Error: prefix + field + ": " + err.Error(), large: errors.Is(err, errTooLarge)})
	}
	if e.ID != "" {
		if err := CheckID(e.ID); err != nil {
			add("id", err)
		}
	}
	if e.Type == "" {
		add("type", errors.New("is required"))
	} else if err := config.CheckPublishable(e.Type); err != nil { // hookjet.* is hookjet's own
		add("type", err)
	}
	if e.Tenant != "" {
		if err := config.CheckTenant(e.Tenant); err != nil {
			add("tenant", err)
		}
	}
	if e.Key != "" {
		if err := CheckKey(e.Key); err != nil {
			add("key", err)
		}
	}
	if maxData > 0 && len(e.Data) > maxData {
		add("data", fmt.Errorf("%w: %d bytes, more than security.max_payload_bytes (%d)", errTooLarge, len(e.Data), maxData))
	}
	return out
}

// errTooLarge marks the problem of a payload too large to store (HTTP 413).
var errTooLarge = errors.New("too large")

package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/publish"
)

// Message is one claimed row on its way to JetStream.
type Message struct {
	// ID is the row id: Nats-Msg-Id, and so the webhook-id.
	ID string
	// EventType is the row's event_type: the subject is
	// hookjet.events.<EventType>.
	EventType string
	// Header holds the row's headers; nil means none.
	Header map[string][]string
	// Payload is the body, unchanged.
	Payload []byte
	// CreatedAt is the row's created_at.
	CreatedAt time.Time
	// Tenant is the row's tenant column (header Hookjet-Tenant), checked
	// with [config.CheckTenant]; "" when the column is NULL or the table
	// has none. A row whose tenant is not valid is rejected, never
	// published without one.
	Tenant string
	// Key is the row's ordering_key column (header Hookjet-Ordering-Key),
	// checked with publish.CheckKey; "" when the column is NULL or the
	// table has none. A row whose key is not valid is rejected, never
	// published without one.
	Key string
	// Reject, when not empty, says why the row cannot be published as an
	// event: the publisher stores it as a dead letter with reason
	// "rejected" and Reject as its last error.
	Reject string
}

// Ack is what became of one [Message].
type Ack struct {
	// Err is nil when JetStream stored the message (a PubAck arrived). An
	// error wrapping [ErrRefused] means it never will as it is.
	Err error
	// Duplicate reports that JetStream already had a message with this
	// Nats-Msg-Id (a republish after a crash, absorbed).
	Duplicate bool
}

// Publisher stores messages in JetStream. jetstream.OutboxPublisher is the
// one hookjet uses.
type Publisher interface {
	// Publish publishes every message of batch asynchronously and waits for
	// their PubAcks (or ctx); the result has one Ack per message, in order.
	Publish(ctx context.Context, batch []Message) []Ack
}

// maxIDLen bounds a row id, which travels in NATS and HTTP headers.
const maxIDLen = 255

// checkID checks a row id: 1..255 bytes without white space or control
// characters (it becomes a NATS and an HTTP header value).
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("id is empty")
	case len(id) > maxIDLen:
		return fmt.Errorf("id is longer than %d bytes", maxIDLen)
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("id contains white space or control characters")
	}
	return nil
}

// parseHeaders decodes the headers column: a JSON object of header names to
// a string or a list of strings. Names that hookjet or NATS own (Nats-*,
// Hookjet-*) are refused, and so are values with control characters.
func parseHeaders(raw []byte) (map[string][]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, errors.New("headers must be a JSON object of names to strings or lists of strings")
	}
	h := make(map[string][]string, len(obj))
	for name, v := range obj {
		if !config.ValidHeaderName(name) {
			return nil, fmt.Errorf("header name %q is not a valid token", name)
		}
		lower := strings.ToLower(name)
		if strings.HasPrefix(lower, "nats-") || strings.HasPrefix(lower, "hookjet-") {
			return nil, fmt.Errorf("header %s is set by hookjet (the row id is the Nats-Msg-Id)", name)
		}
		var values []string
		var one string
		if err := json.Unmarshal(v, &one); err == nil {
			values = []string{one}
		} else if err := json.Unmarshal(v, &values); err != nil {
			return nil, fmt.Errorf("header %s: want a string or a list of strings", name)
		}
		for _, s := range values {
			if strings.ContainsFunc(s, func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) {
				return nil, fmt.Errorf("header %s: value contains control characters", name)
			}
		}
		h[name] = values
	}
	return h, nil
}

// checkTenant checks a row's tenant column: the tenant, or why it is none.
// An empty string is not a tenant: an event without one has NULL.
func checkTenant(t string) (tenant, reject string) {
	if t == "" {
		return "", "tenant: is empty (NULL for an event without a tenant)"
	}
	if err := config.CheckTenant(t); err != nil {
		return "", "tenant: " + err.Error()
	}
	return t, ""
}

// checkKey checks a row's ordering_key column: the key, or why it is none.
// An empty string is not a key: an event without one has NULL.
func checkKey(k string) (key, reject string) {
	if k == "" {
		return "", "ordering_key: is empty (NULL for an event without a key)"
	}
	if err := publish.CheckKey(k); err != nil {
		return "", "ordering_key: " + err.Error()
	}
	return k, ""
}

// row is one claimed outbox row.
type row struct {
	id, eventType string
	payload       []byte
	headers       []byte
	createdAt     time.Time
	tenant        *string // nil: NULL, or the table has no tenant column
	key           *string // nil: NULL, or the table has no ordering_key column
}

// message turns a row into a Message, with Reject set when the row can never
// be published as an event. Reasons never contain the payload.
func message(r row, maxPayload int) Message {
	m := Message{ID: r.id, EventType: r.eventType, Payload: r.payload, CreatedAt: r.createdAt}
	var err error
	if err = checkID(r.id); err != nil {
		m.Reject = err.Error()
	} else if err = config.CheckPublishable(r.eventType); err != nil { // hookjet.* is hookjet's own
		m.Reject = "event_type: " + err.Error()
	} else if maxPayload > 0 && len(r.payload) > maxPayload {
		m.Reject = fmt.Sprintf("payload of %d bytes exceeds security.max_payload_bytes (%d)", len(r.payload), maxPayload)
	}
	if r.tenant != nil {
		// A valid tenant stays on the dead letter of a row rejected for
		// another reason; an invalid one is never published.
		var reject string
		if m.Tenant, reject = checkTenant(*r.tenant); m.Reject == "" {
			m.Reject = reject
		}
	}
	if r.key != nil { // as the tenant: a valid key stays on a dead letter
		var reject string
		if m.Key, reject = checkKey(*r.key); m.Reject == "" {
			m.Reject = reject
		}
	}
	h, herr := parseHeaders(r.headers)
	if herr != nil && m.Reject == "" {
		m.Reject = herr.Error()
	}
	if herr == nil {
		m.Header = h
	}
	return m
}

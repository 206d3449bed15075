package jetstream

import (
	"context"
	"errors"
	"strings"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// StoredEvent is an event as HOOKJET_EVENTS holds it.
type StoredEvent struct {
	ID          string // its Nats-Msg-Id; empty when published without one
	Type        string
	PublishedAt time.Time
	Size        int
	// Tenant and Key are its Hookjet-Tenant and Hookjet-Ordering-Key;
	// ContentType its Content-Type ("" when absent).
	Tenant, Key, ContentType string
	// Header holds the message's headers; Data its payload.
	Header map[string][]string
	Data   []byte
}

// EventAt reads the event at seq in HOOKJET_EVENTS; found is false when the
// log no longer holds it (trimmed, or past streams.max_age).
func (n *Node) EventAt(ctx context.Context, seq uint64) (ev StoredEvent, found bool, err error) {
	st, err := n.js.Stream(ctx, EventsStream)
	if err != nil {
		return StoredEvent{}, false, err
	}
	m, err := st.GetMsg(ctx, seq)
	if errors.Is(err, natsjs.ErrMsgNotFound) {
		return StoredEvent{}, false, nil
	}
	if err != nil {
		return StoredEvent{}, false, err
	}
	return StoredEvent{
		ID: m.Header.Get(HdrMsgID), Type: strings.TrimPrefix(m.Subject, EventsPrefix), PublishedAt: m.Time, Size: len(m.Data),
		Tenant: m.Header.Get(HdrTenant), Key: m.Header.Get(HdrOrderingKey), ContentType: m.Header.Get(HdrContentType),
		Header: m.Header, Data: m.Data,
	}, true, nil
}

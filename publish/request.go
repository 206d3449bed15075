package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/textproto"
	"strings"
)

// Reply is the answer to a publish request on hookjet.publish.<type> once
// its event is stored.
type Reply struct {
	// ID is the event's id: the request's Nats-Msg-Id, or the one
	// generated for it.
	ID string `json:"id"`
	// Duplicate is set when the id was stored before (within the stream's
	// duplicate window): the event was not stored again.
	Duplicate bool `json:"duplicate"`
	// Stream and Seq say where the event is stored (for a duplicate: the
	// first copy).
	Stream string `json:"stream,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
}

// ErrorReply is the answer to a publish request that was not stored.
type ErrorReply struct {
	// Error names the problem ("type: is required", "JetStream cannot
	// store the events: ...").
	Error string `json:"error"`
	// Field names the bad part of the request (type, id, tenant, key,
	// data); empty when the request was fine and storing failed.
	Field string `json:"field,omitempty"`
}

// Answer stores the event of a publish request and returns the reply's
// body: [Reply] or [ErrorReply] as JSON. typ is the subject after
// "hookjet.publish.", h the request's headers (Nats-Msg-Id,
// Hookjet-Tenant, Hookjet-Ordering-Key; others such as Content-Type and
// traceparent are stored with the event, other Nats-* and Hookjet-* ones
// dropped), data the payload.
func (c *Committer) Answer(ctx context.Context, typ string, h map[string][]string, data []byte) []byte {
	e := Event{Type: typ, Data: data}
	for name, vs := range h {
		if len(vs) == 0 {
			continue
		}
		switch canon := textproto.CanonicalMIMEHeaderKey(name); {
		case canon == HeaderID:
			e.ID = vs[0]
		case canon == HeaderTenant:
			e.Tenant = vs[0]
		case canon == HeaderKey:
			e.Key = vs[0]
		case strings.HasPrefix(canon, "Nats-"), strings.HasPrefix(canon, "Hookjet-"):
		default:
			if e.Header == nil {
				e.Header = map[string][]string{}
			}
			e.Header[name] = vs
		}
	}
	if ps := check(&e, "", c.maxData); len(ps) > 0 {
		return errorJSON(ps[0].Error, ps[0].Field)
	}
	if e.ID == "" {
		e.ID = NewID()
	}
	res, err := c.Publish(ctx, []Event{e})
	if err == nil {
		err = res[0].Err
	}
	if err != nil {
		return errorJSON(storeError(err).Error(), "")
	}
	b, _ := json.Marshal(Reply{ID: e.ID, Duplicate: res[0].Duplicate, Stream: res[0].Stream, Seq: res[0].Seq})
	return b
}

// storeError is err as a caller sees it: every failure to store wraps
// [ErrUnavailable] (HTTP 503), with the reason.
func storeError(err error) error {
	if errors.Is(err, ErrUnavailable) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUnavailable, err)
}

func errorJSON(msg, field string) []byte {
	b, _ := json.Marshal(ErrorReply{Error: msg, Field: field})
	return b
}

// ReplyError is a publish request's refusal, as [ParseReply] returns it.
type ReplyError struct {
	ErrorReply
}

func (e *ReplyError) Error() string { return e.ErrorReply.Error }

// ParseReply reads the body of a reply to a publish request: the [Reply],
// or a [*ReplyError] with the refusal.
func ParseReply(body []byte) (Reply, error) {
	var r struct {
		Reply
		ErrorReply
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Reply{}, fmt.Errorf("publish: unreadable reply: %w", err)
	}
	if r.Error != "" {
		return Reply{}, &ReplyError{r.ErrorReply}
	}
	return r.Reply, nil
}

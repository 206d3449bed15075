package publish

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/textproto"
	"slices"
	"strings"
)

// Reply is the answer to a publish request on hookjet.publish.<type> once
// its event is stored.
type Reply struct {
	// ID is the event's id: the request's Nats-Msg-Id, or the one
	// generated for it.
	ID string `json:"id"`
	// Duplicate is set when the id was stored before (within the stream's
	// duplicate window, or remembered by hookjet's dedupe ledger): the
	// event was not stored again.
	Duplicate bool `json:"duplicate"`
	// Stream and Seq say where the event is stored (for a duplicate: the
	// first copy).
	Stream string `json:"stream,omitempty"`
	Seq    uint64 `json:"seq,omitempty"`
}

// ErrorReply is the answer to a publish request that was not stored, in
// the shape of the HTTP API's errors: every bad field in Errors, the first
// also in Error and Field.
type ErrorReply struct {
	// Error names the problem ("type: is required", "JetStream cannot
	// store the events: ...").
	Error string `json:"error"`
	// Field names the bad part of the request (type, id, tenant, key,
	// data); empty when the request was fine and storing failed.
	Field string `json:"field,omitempty"`
	// Errors holds every bad field of the request; empty when storing
	// failed.
	Errors []Problem `json:"errors,omitempty"`
	// Status is 422 ([StatusInvalid]) when the catalogue refused the
	// event (a payload that fails its type's schema under catalog.validate
	// enforce, a type not in it under catalog.strict), as the HTTP API
	// answers; absent otherwise.
	Status int `json:"status,omitempty"`
}

// Answer stores the event of a publish request and returns the reply's
// body: [Reply] or [ErrorReply] as JSON. typ is the subject after
// "hookjet.publish.", h the request's headers (Nats-Msg-Id,
// Hookjet-Tenant, Hookjet-Ordering-Key; others such as Content-Type and
// traceparent are stored with the event, other Nats-* and Hookjet-* ones
// dropped), data the payload.
func (c *Committer) Answer(ctx context.Context, typ string, h map[string][]string, data []byte) []byte {
	e := Event{Type: typ, Data: data}
	// Each of the three may be spelt in any case, and more than once; all
	// its values must agree (the fan-out refuses an event naming two
	// tenants, dispatch's eventTenant).
	var ids, tenants, keys []string
	for name, vs := range h {
		if len(vs) == 0 {
			continue
		}
		switch canon := textproto.CanonicalMIMEHeaderKey(name); {
		case canon == HeaderID:
			ids = append(ids, vs...)
		case canon == HeaderTenant:
			tenants = append(tenants, vs...)
		case canon == HeaderKey:
			keys = append(keys, vs...)
		case strings.HasPrefix(canon, "Nats-"), strings.HasPrefix(canon, "Hookjet-"):
		default:
			if e.Header == nil {
				e.Header = map[string][]string{}
			}
			e.Header[name] = vs
		}
	}
	var ps []Problem
	for _, f := range []struct {
		field, header string
		vals          []string
		dst           *string
	}{{"id", HeaderID, ids, &e.ID}, {"tenant", HeaderTenant, tenants, &e.Tenant}, {"key", HeaderKey, keys, &e.Key}} {
		if len(f.vals) == 0 {
			continue
		}
		*f.dst = f.vals[0]
		if slices.ContainsFunc(f.vals[1:], func(v string) bool { return v != f.vals[0] }) {
			ps = append(ps, Problem{Field: f.field, Error: fmt.Sprintf("%s: header %s names more than one value (%s)", f.field, f.header, strings.Join(f.vals, ", "))})
		}
	}
	for _, p := range check(&e, "", c.maxData) {
		if !slices.ContainsFunc(ps, func(q Problem) bool { return q.Field == p.Field }) {
			ps = append(ps, p)
		}
	}
	status := 0
	if len(ps) == 0 {
		if ps = c.refusals([]Event{e}, false); len(ps) > 0 {
			status = StatusInvalid
		}
	}
	if len(ps) > 0 {
		b, _ := json.Marshal(ErrorReply{Error: ps[0].Error, Field: ps[0].Field, Errors: ps, Status: status})
		return b
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

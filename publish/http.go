package publish

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hookjet/hookjet/api"
)

// Route is the HTTP publish route.
const Route = "POST /api/v1/events"

// DefaultMaxBody bounds a request body of the HTTP publish API; a larger
// one is answered 413.
const DefaultMaxBody = 32 << 20

// fieldError is an answer naming the offending fields, as the admin API's:
// every problem in Errors, the first also in Error and Field.
type fieldError struct {
	Error  string    `json:"error"`
	Field  string    `json:"field"`
	Errors []Problem `json:"errors"`
}

// HandlerOption configures [NewHandler].
type HandlerOption func(*handler)

// WithTokens sets the bearer tokens that authorise a request (publish.token
// and admin.token; empty ones are ignored). Without any, every request is
// authorised.
func WithTokens(tokens ...string) HandlerOption {
	return func(h *handler) {
		for _, t := range tokens {
			if t != "" {
				h.tokens = append(h.tokens, []byte("Bearer "+t))
			}
		}
	}
}

// WithMaxBody bounds a request body (default [DefaultMaxBody]).
func WithMaxBody(n int64) HandlerOption { return func(h *handler) { h.maxBody = n } }

// NewHandler returns the handler of POST /api/v1/events over c.
func NewHandler(c *Committer, opts ...HandlerOption) http.Handler {
	h := &handler{c: c, maxBody: DefaultMaxBody}
	for _, o := range opts {
		o(h)
	}
	return h
}

type handler struct {
	c       *Committer
	tokens  [][]byte
	maxBody int64
}

func (h *handler) authorized(r *http.Request) bool {
	if len(h.tokens) == 0 {
		return true
	}
	got := []byte(r.Header.Get("Authorization"))
	ok := 0
	for _, t := range h.tokens {
		ok |= subtle.ConstantTimeCompare(got, t)
	}
	return ok == 1
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hookjet"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeProblems(w, http.StatusRequestEntityTooLarge, []Problem{{Field: "body", Error: fmt.Sprintf("body: larger than %d bytes", h.maxBody)}})
			return
		}
		writeProblems(w, http.StatusBadRequest, []Problem{{Field: "body", Error: "body: " + err.Error()}})
		return
	}
	events, ps := decode(body, h.c.maxData)
	if len(ps) == 0 && h.c.checks() {
		if ps = h.c.refusals(events, batched(body)); len(ps) > 0 {
			writeProblems(w, http.StatusUnprocessableEntity, ps)
			return
		}
	}
	if len(ps) > 0 {
		status := http.StatusBadRequest
		if slices.ContainsFunc(ps, func(p Problem) bool { return p.large }) {
			status = http.StatusRequestEntityTooLarge
		}
		writeProblems(w, status, ps)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	res, err := h.c.Publish(ctx, events)
	if err == nil {
		err = firstErr(res)
	}
	if err != nil {
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": storeError(err).Error()})
		return
	}
	out := api.PublishResult{IDs: make([]string, len(events)), DuplicateIDs: []string{}, Results: make([]api.PublishedEvent, len(events))}
	for i, e := range events {
		out.IDs[i] = e.ID
		out.Results[i] = api.PublishedEvent{ID: e.ID, Stream: res[i].Stream, Seq: res[i].Seq, Duplicate: res[i].Duplicate}
		if res[i].Duplicate {
			out.Duplicates++
			out.DuplicateIDs = append(out.DuplicateIDs, e.ID)
		}
	}
	writeJSON(w, http.StatusAccepted, out)
}

// decode reads a request body, one event or {"events": [...]}, and returns
// its events (ids generated where missing) or every problem.
func decode(body []byte, maxData int) ([]Event, []Problem) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil || top == nil {
		p := api.FieldProblem("body", `a JSON object is required: one event {"type", "data", ...} or {"events": [...]}`)
		if err != nil && len(bytes.TrimSpace(body)) > 0 {
			p = api.DecodeProblem(err, p.Error)
		}
		return nil, []Problem{{Field: p.Field, Error: p.Error}}
	}
	raw, batch := top["events"]
	if !batch {
		e, ps := decodeEvent(top, "", maxData)
		return []Event{e}, ps
	}
	var ps []Problem
	for _, k := range sortedKeys(top) {
		if k != "events" {
			ps = append(ps, Problem{Field: k, Error: k + `: unknown field (a request has either "events" or one event's fields)`})
		}
	}
	var list []json.RawMessage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, append(ps, Problem{Field: "events", Error: "events: must be a list of events"})
	}
	switch {
	case len(list) == 0:
		return nil, append(ps, Problem{Field: "events", Error: "events: must hold at least one event"})
	case len(list) > MaxBatch:
		return nil, append(ps, Problem{Field: "events", Error: fmt.Sprintf("events: at most %d events, got %d", MaxBatch, len(list)), large: true})
	}
	events := make([]Event, len(list))
	for i, r := range list {
		prefix := "events[" + strconv.Itoa(i) + "]"
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r, &obj); err != nil || obj == nil {
			ps = append(ps, Problem{Field: prefix, Error: prefix + ": must be a JSON object"})
			continue
		}
		var eps []Problem
		events[i], eps = decodeEvent(obj, prefix+".", maxData)
		ps = append(ps, eps...)
	}
	return events, ps
}

// decodeEvent reads one event's fields, named under prefix, and checks
// them; a missing id is generated.
func decodeEvent(obj map[string]json.RawMessage, prefix string, maxData int) (Event, []Problem) {
	var e Event
	var ps []Problem
	str := func(k string, dst *string) {
		raw, ok := obj[k]
		if !ok {
			return
		}
		if err := json.Unmarshal(raw, dst); err != nil || string(raw) == "null" {
			ps = append(ps, Problem{Field: prefix + k, Error: prefix + k + ": must be a string"})
		} else if *dst == "" && k != "type" {
			ps = append(ps, Problem{Field: prefix + k, Error: prefix + k + ": is empty (leave it out for none)"})
		}
	}
	str("id", &e.ID)
	str("type", &e.Type)
	str("tenant", &e.Tenant)
	str("key", &e.Key)
	for _, k := range sortedKeys(obj) {
		switch k {
		case "id", "type", "tenant", "key", "data":
		default:
			ps = append(ps, Problem{Field: prefix + k, Error: prefix + k + ": unknown field (an event has id, type, data, tenant and key)"})
		}
	}
	if raw, ok := obj["data"]; ok && isNull(raw) {
		ps = append(ps, Problem{Field: prefix + "data", Error: prefix + "data: is null; the payload must be a JSON value other than null (an empty object {} for none)"})
	} else if ok {
		e.Data = raw
	} else {
		ps = append(ps, Problem{Field: prefix + "data", Error: prefix + "data: is required (the payload, any JSON value)"})
	}
	for _, p := range check(&e, prefix, maxData) {
		if !slices.ContainsFunc(ps, func(q Problem) bool { return q.Field == p.Field }) {
			ps = append(ps, p)
		}
	}
	if e.ID == "" {
		e.ID = NewID()
	}
	return e, ps
}

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func writeProblems(w http.ResponseWriter, status int, ps []Problem) {
	writeJSON(w, status, fieldError{Error: ps[0].Error, Field: ps[0].Field, Errors: ps})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

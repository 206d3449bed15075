package admin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/reach"
)

// EventList lists the stored events (jetstream.EventIndex).
type EventList interface {
	Page(ctx context.Context, q api.EventQuery) (api.EventPage, error)
}

// EventTargets tells the event view which endpoints an event goes to and
// what holds them (the engine's queries).
type EventTargets interface {
	// EventTargets returns the endpoints in force that an event of type
	// typ with tenant tenant matches by pattern and tenant (before their
	// filters; never an endpoint of another tenant), ordered by id.
	EventTargets(tenant, typ string) []EventTarget
}

// EventTarget is an endpoint an event matches and what holds its
// deliveries now.
type EventTarget struct {
	Endpoint config.Endpoint
	Disabled bool
	// BreakerOpenUntil is when its open breaker lets a probe through;
	// HoldUntil when a receiver's Retry-After hold ends; zero: none.
	BreakerOpenUntil, HoldUntil time.Time
}

// WithEvents serves GET /api/v1/events from l, and completes each event's
// view with the endpoints targets says it matches (nil: only those the
// delivery log names); userAgent is the User-Agent deliveries send.
func WithEvents(l EventList, targets EventTargets, userAgent string) Option {
	return func(a *handler) { a.elist, a.targets, a.userAgent = l, targets, userAgent }
}

// eventList is GET /api/v1/events.
func (a *handler) eventList(w http.ResponseWriter, r *http.Request) {
	if a.elist == nil {
		writeError(w, http.StatusNotFound, "this process keeps no index of the event log")
		return
	}
	q, ok := a.eventQuery(w, r)
	if !ok {
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	page, err := a.elist.Page(ctx, q)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if page.Events == nil {
		page.Events = []api.EventSummary{}
	}
	writeJSON(w, http.StatusOK, page)
}

// eventQuery reads the list's filters; a bad one is answered with 400
// naming it.
func (a *handler) eventQuery(w http.ResponseWriter, r *http.Request) (api.EventQuery, bool) {
	v := r.URL.Query()
	q := api.EventQuery{Type: v.Get("type"), Tenant: v.Get("tenant"), Prefix: v.Get("prefix"), Limit: defaultPage}
	bad := func(field, msg string) (api.EventQuery, bool) {
		writeFieldError(w, http.StatusBadRequest, field, field+": "+msg)
		return q, false
	}
	if q.Type != "" {
		if err := config.ValidateEventType(q.Type); err != nil {
			return bad("type", err.Error())
		}
	}
	if q.Tenant != "" && !api.ValidToken(q.Tenant) {
		return bad("tenant", "not a tenant id (no dots, wildcards or spaces)")
	}
	if len(q.Prefix) > 255 {
		return bad("prefix", "at most 255 bytes")
	}
	var err error
	now := a.now()
	if q.Since, err = api.ParseTime(v.Get("since"), now); err != nil {
		return bad("since", err.Error())
	}
	if q.Until, err = api.ParseTime(v.Get("until"), now); err != nil {
		return bad("until", err.Error())
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPage {
			return bad("limit", fmt.Sprintf("must be a number from 1 to %d", maxPage))
		}
		q.Limit = n
	}
	if s := v.Get("cursor"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil || n == 0 {
			return bad("cursor", "must be the next cursor of a previous page")
		}
		q.Cursor = n
	}
	return q, true
}

// writeEvent writes the event view: JSON as writeJSON, without escaping
// <, > and & in strings, so that the payload under data reads as it was
// published.
func writeEvent(w http.ResponseWriter, ev *api.Event) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(ev)
}

// showPayloads is console.show_payloads.
func (a *handler) showPayloads() bool { return a.cfg == nil || a.cfg().Console.ShowPayloads }

// withPayload sets ev's payload fields from data: the JSON value, or
// base64 when it is not JSON or longer than api.MaxPayloadShown (then its
// first api.MaxPayloadShown bytes, flagged as truncated).
func withPayload(ev *api.Event, data []byte, show bool) {
	if !show {
		ev.DataHidden = true
		return
	}
	if len(data) > api.MaxPayloadShown {
		ev.DataBase64, ev.DataTruncated = base64.StdEncoding.EncodeToString(data[:api.MaxPayloadShown]), true
		return
	}
	if json.Valid(data) && len(bytes.TrimSpace(data)) > 0 {
		var buf bytes.Buffer
		if json.Compact(&buf, data) == nil {
			ev.Data = buf.Bytes()
			return
		}
	}
	ev.DataBase64 = base64.StdEncoding.EncodeToString(data)
}

// outcomes completes ev's deliveries (from the delivery log) with every
// endpoint in force that the event matches: why it was not delivered
// (filtered out, held), and the request hookjet builds for it. Endpoints
// created after the event was published are left out: it never went to
// them.
func (a *handler) outcomes(ev *api.Event, info EventInfo) {
	if a.targets == nil {
		return
	}
	targets := a.targets.EventTargets(info.Tenant, info.Type)
	byEndpoint := make(map[string]int, len(ev.Deliveries))
	for i, d := range ev.Deliveries {
		byEndpoint[d.Endpoint] = i // the last delivery of each endpoint
	}
	var fe *filter.Event
	for i := range targets {
		t := &targets[i]
		ep := &t.Endpoint
		if !ep.CreatedAt.IsZero() && ep.CreatedAt.After(info.PublishedAt) {
			continue
		}
		req := a.builtRequest(ep, ev.ID, info)
		if j, ok := byEndpoint[ep.ID]; ok {
			d := &ev.Deliveries[j]
			d.Request = req
			if d.State == "pending" {
				held(d, t)
			}
			continue
		}
		d := api.EventDelivery{Endpoint: ep.ID, State: "pending", Request: req, Attempts: []attempt.Record{}}
		if ep.Filter != "" {
			if fe == nil {
				fe = filter.NewEvent(filter.Input{Type: info.Type, ID: ev.ID, Tenant: info.Tenant, Key: info.Key, Headers: info.Headers, Data: info.Data}, filter.Limits{})
			}
			if match, why := a.evalFilter(ep.Filter, fe); !match {
				d.State, d.Reason = "filtered_out", why
			}
		}
		if d.State == "pending" {
			held(&d, t)
		}
		ev.Deliveries = append(ev.Deliveries, d)
	}
}

// evalFilter runs the endpoint's current filter on the event: whether it
// lets it through, and why not in words.
func (a *handler) evalFilter(expr string, fe *filter.Event) (bool, string) {
	f, err := a.cfg().Security.CompileFilter(expr)
	if err != nil {
		return false, "filtered out: its filter does not compile: " + err.Error()
	}
	match, err := f.Match(fe)
	switch {
	case err != nil:
		return false, "filtered out: its filter failed on this event: " + err.Error()
	case !match:
		return false, "filtered out: its filter is false for this event"
	}
	return true, ""
}

// held says what holds pending delivery d of target t.
func held(d *api.EventDelivery, t *EventTarget) {
	switch {
	case t.Disabled:
		d.Held, d.Reason = "disabled", "held: the endpoint is disabled"
	case !t.BreakerOpenUntil.IsZero():
		u := t.BreakerOpenUntil.UTC()
		d.Held, d.HeldUntil, d.Reason = "breaker_open", &u, "held: the endpoint's breaker is open until "+u.Format(time.RFC3339)
	case !t.HoldUntil.IsZero():
		u := t.HoldUntil.UTC()
		d.Held, d.HeldUntil, d.Reason = "retry_after", &u, "held: the receiver asked to wait until "+u.Format(time.RFC3339)
	}
}

// Values shown for headers the view does not reveal.
const (
	perAttempt = "[per attempt]"
)

// builtRequest is the request hookjet builds for endpoint ep and the event:
// the headers of package deliver's Client.Do (a transform's aside), secret
// values redacted.
func (a *handler) builtRequest(ep *config.Endpoint, id string, info EventInfo) *api.BuiltRequest {
	typ := ep.Destination.Type
	if typ == "" {
		typ = config.DestinationWebhook
	}
	h := map[string]string{}
	req := &api.BuiltRequest{Destination: typ, Headers: h}
	if typ == config.DestinationWebhook {
		req.Method, req.URL = http.MethodPost, redactedURL(ep.URL)
		for name := range ep.Headers {
			h[http.CanonicalHeaderKey(name)] = redacted
		}
		if _, set := h["User-Agent"]; !set && a.userAgent != "" {
			h["User-Agent"] = a.userAgent
		}
		if ep.Auth.Type != "" && ep.Auth.Type != reach.MTLS {
			h["Authorization"] = redacted
		}
		ct := info.ContentType
		if ct == "" {
			ct = "application/json"
		}
		h["Content-Type"] = ct
	}
	h["webhook-id"] = id
	h["webhook-timestamp"] = perAttempt
	if len(ep.Secrets) > 0 {
		h["webhook-signature"] = redacted
	}
	h["Hookjet-Event-Type"] = info.Type
	if info.Tenant != "" {
		h["Hookjet-Tenant"] = info.Tenant
	}
	if info.Key != "" {
		h["Hookjet-Ordering-Key"] = info.Key
	}
	return req
}

// redactedURL is u with its password redacted; an unparsable URL is not
// shown.
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "[invalid]"
	}
	return p.Redacted()
}

// scopeDeliveries keeps the deliveries of tenant's endpoints in force.
func (a *handler) scopeDeliveries(ev *api.Event, info EventInfo, tenant string) {
	if a.targets == nil {
		ev.Deliveries = []api.EventDelivery{}
		return
	}
	own := map[string]bool{}
	for _, t := range a.targets.EventTargets(info.Tenant, info.Type) {
		own[t.Endpoint.ID] = t.Endpoint.Tenant == tenant
	}
	kept := ev.Deliveries[:0]
	for _, d := range ev.Deliveries {
		if own[d.Endpoint] {
			kept = append(kept, d)
		}
	}
	ev.Deliveries = kept
}

// sameTenant reports whether the event view asked for tenant (empty: an
// operator's, every event) may show an event of eventTenant.
func sameTenant(tenant, eventTenant string) bool {
	return tenant == "" || tenant == eventTenant
}

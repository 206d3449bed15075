package console

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// The portal's catalogue and events: the event types a customer may
// subscribe to, and the tenant's own events with their payloads and what
// happened at the tenant's endpoints. Another tenant's event, and the
// deliveries of the event to the operator's own endpoints, are not shown.

// portalCatalogue is the catalogue page: every type with its description,
// schema and example payloads.
func (c *Console) portalCatalogue(w http.ResponseWriter, r *http.Request, p *page, _ session) {
	p.Title = "Event types"
	p.Data = c.catalogue(r.Context())
	c.render(w, http.StatusOK, "portal_types", p)
}

type portalEventsData struct {
	Events []eventSummary
	Next   string
	Type   string
	Types  catalogue
}

// portalEvents lists the tenant's events, newest first, by type.
func (c *Console) portalEvents(w http.ResponseWriter, r *http.Request, p *page, sess session) {
	q := r.URL.Query()
	v := url.Values{"tenant": {sess.Tenant}, "limit": {strconv.Itoa(pageSize)}}
	d := portalEventsData{Type: strings.TrimSpace(q.Get("type")), Types: c.catalogue(r.Context())}
	if d.Type != "" {
		v.Set("type", d.Type)
	}
	if s := q.Get("cursor"); s != "" {
		v.Set("cursor", s)
	}
	var pg struct {
		Events []eventSummary `json:"events"`
		Next   string         `json:"next"`
	}
	p.Title = "Your events"
	if _, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/events?"+v.Encode(), nil, &pg); err != nil {
		if missingRoute(err) {
			p.Error = "The list of events is not available here."
			c.render(w, http.StatusNotImplemented, "error", p)
			return
		}
		p.Error = customerWords(err.Error())
		c.render(w, statusOf(err), "error", p)
		return
	}
	for _, e := range pg.Events {
		if e.Tenant == sess.Tenant { // the API filtered; checked again
			d.Events = append(d.Events, e)
		}
	}
	d.Next = pg.Next
	p.Data = d
	c.render(w, http.StatusOK, "portal_events", p)
}

// portalEvent is an event as the portal shows it: the deliveries are
// only those to the tenant's own endpoints.
type portalEvent struct{ event }

// Payload is the payload as the page shows it: JSON indented, else
// base64.
func (e portalEvent) Payload() string {
	if s := indentJSON(e.Data); s != "" {
		return s
	}
	return e.DataBase64
}

// portalEventPage shows one of the tenant's events: its payload, and each
// delivery to the tenant's endpoints with its attempts. Another tenant's
// event, or one without a tenant, is 404 as one that does not exist.
func (c *Console) portalEventPage(w http.ResponseWriter, r *http.Request, p *page, sess session) {
	id := r.PathValue("id")
	var ev portalEvent
	_, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/events/"+url.PathEscape(id), nil, &ev)
	if (err == nil && ev.Tenant != sess.Tenant) || notFound(err) {
		p.Title = "Not found"
		p.Error = "There is no event " + id + "."
		c.render(w, http.StatusNotFound, "error", p)
		return
	}
	if err != nil {
		c.fail(w, p, err)
		return
	}
	own := map[string]endpoint{}
	shown := ev.Deliveries[:0]
	for _, d := range ev.Deliveries {
		ep, seen := own[d.Endpoint]
		if !seen {
			if _, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/endpoints/"+url.PathEscape(d.Endpoint), nil, &ep); err != nil {
				ep = endpoint{} // deleted, or gone: not shown
			}
			own[d.Endpoint] = ep
		}
		if ep.ID == "" || ep.Tenant != sess.Tenant {
			continue // the operator's endpoint, or another's
		}
		hide := c.o.HideResponses != nil && c.o.HideResponses(ep.URL)
		for i := range d.Attempts {
			a := &d.Attempts[i]
			if a.Class == "parked" {
				a.Class, a.Reason = "waiting", customerReason(a.Reason)
			}
			a.Error = customerWords(a.Error)
			if hide {
				a.Response = ""
			}
		}
		d.Reason = customerWords(d.Reason)
		shown = append(shown, d)
	}
	ev.Deliveries = shown
	p.Title = "Event " + ev.ID
	p.Data = ev
	c.render(w, http.StatusOK, "portal_event", p)
}

// typePicker is the event-type field of a form: the catalogue's types as
// boxes, and the patterns that are not one of them typed in.
type typePicker struct {
	Types  catalogue
	Chosen []string
}

// Checked reports whether type name is chosen.
func (t typePicker) Checked(name string) bool { return slices.Contains(t.Chosen, name) }

// Others are the chosen patterns that are not a type of the catalogue,
// separated by spaces.
func (t typePicker) Others() string {
	var out []string
	for _, c := range t.Chosen {
		if _, ok := t.Types.find(c); !ok {
			out = append(out, c)
		}
	}
	return strings.Join(out, " ")
}

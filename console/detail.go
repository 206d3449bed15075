package console

import (
	"errors"
	"net/http"
	"net/url"
	"strconv"
)

// attemptsShown is how many attempts the endpoint page lists and charts.
const attemptsShown = 100

type endpointData struct {
	E        endpoint
	Attempts []attempt
	Chart    chart
	LogError string // why there are no attempts
	Next     string // cursor of older attempts
	Class    string
	Event    string // the test event just sent
	Redo     url.Values
	Test     *codeTest // the filter or transform test just run
}

// loadEndpoint reads an endpoint and its attempts from the delivery log.
func (c *Console) loadEndpoint(r *http.Request, id string) (endpointData, error) {
	ctx := r.Context()
	q := r.URL.Query()
	d := endpointData{Class: q.Get("class"), Event: q.Get("event")}
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/endpoints/"+url.PathEscape(id), nil, &d.E); err != nil {
		return d, err
	}
	v := url.Values{"limit": {strconv.Itoa(attemptsShown)}}
	for _, k := range []string{"class", "after"} {
		if s := q.Get(k); s != "" {
			v.Set(k, s)
		}
	}
	var pg attemptPage
	_, err := c.api.call(ctx, http.MethodGet, "/api/v1/endpoints/"+url.PathEscape(id)+"/attempts?"+v.Encode(), nil, &pg)
	switch {
	case missingRoute(err):
		d.LogError = "delivery log unavailable"
	case err != nil:
		d.LogError = "delivery log: " + err.Error()
	}
	d.Attempts, d.Next = pg.Attempts, pg.Next
	d.Chart = latencyChart(pg.Attempts)
	return d, nil
}

// endpointPage is /console/endpoints/{id}: health, the latency chart,
// attempts, and the actions.
func (c *Console) endpointPage(w http.ResponseWriter, r *http.Request, p *page) {
	c.renderEndpoint(w, r, p, http.StatusOK)
}

func (c *Console) renderEndpoint(w http.ResponseWriter, r *http.Request, p *page, status int) {
	c.renderEndpointWith(w, r, p, status, nil)
}

// renderEndpointWith renders the endpoint page after more changes the
// page's data (when not nil).
func (c *Console) renderEndpointWith(w http.ResponseWriter, r *http.Request, p *page, status int, more func(*endpointData)) {
	d, err := c.loadEndpoint(r, r.PathValue("id"))
	if err != nil {
		c.fail(w, p, err)
		return
	}
	if more != nil {
		more(&d)
	}
	p.Title = "Endpoint " + d.E.ID
	p.Data = d
	c.render(w, status, "endpoint", p)
}

// eventsData is the events page: the search and one page of events.
type eventsData struct {
	Type, Tenant, Prefix, Since, Until string
	Events                             []eventSummary
	Next                               string
	Cursor                             string
}

// eventsPage is /console/events: the stored events, newest first, searched
// by type, tenant, time range and id prefix (GET /api/v1/events). The
// header's search (?id=) goes to the event's page.
func (c *Console) eventsPage(w http.ResponseWriter, r *http.Request, p *page) {
	q := r.URL.Query()
	if id := q.Get("id"); id != "" {
		http.Redirect(w, r, "/console/events/"+url.PathEscape(id), http.StatusSeeOther)
		return
	}
	d := eventsData{Type: q.Get("type"), Tenant: q.Get("tenant"), Prefix: q.Get("prefix"), Since: q.Get("since"), Until: q.Get("until"), Cursor: q.Get("cursor")}
	p.Title = "Events"
	v := url.Values{"limit": {"100"}}
	for k, s := range map[string]string{"type": d.Type, "tenant": d.Tenant, "prefix": d.Prefix, "since": d.Since, "until": d.Until, "cursor": d.Cursor} {
		if s != "" {
			v.Set(k, s)
		}
	}
	var pg struct {
		Events []eventSummary `json:"events"`
		Next   string         `json:"next"`
	}
	_, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/events?"+v.Encode(), nil, &pg)
	var ae *apiError
	switch {
	case errors.As(err, &ae) && ae.Status == http.StatusBadRequest:
		p.Error = ae.Msg // names the field
	case err != nil:
		c.fail(w, p, err)
		return
	}
	d.Events, d.Next = pg.Events, pg.Next
	p.Data = d
	status := http.StatusOK
	if p.Error != "" {
		status = http.StatusBadRequest
	}
	c.render(w, status, "events", p)
}

// eventPage is /console/events/{id}: the event and its deliveries with
// every attempt.
func (c *Console) eventPage(w http.ResponseWriter, r *http.Request, p *page) {
	id := r.PathValue("id")
	p.Title = "Event " + id
	var ev event
	_, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/events/"+url.PathEscape(id), nil, &ev)
	switch {
	case missingRoute(err):
		p.Error = "delivery log unavailable: this hookjet cannot look events up."
		c.render(w, http.StatusNotImplemented, "error", p)
		return
	case err != nil:
		c.fail(w, p, err)
		return
	}
	p.Data = ev
	c.render(w, http.StatusOK, "event", p)
}

type dlqData struct {
	Stats    []dlqStat
	Entries  []dlqEntry
	Endpoint string
	Since    string
	Until    string
}

// dlqPage is /console/dlq: per-endpoint statistics, the dead letters
// matching the filter, and the replay form.
func (c *Console) dlqPage(w http.ResponseWriter, r *http.Request, p *page) {
	ctx := r.Context()
	q := r.URL.Query()
	d := dlqData{Endpoint: q.Get("endpoint"), Since: q.Get("since"), Until: q.Get("until")}
	p.Title = "Dead letters"
	var st struct {
		Endpoints []dlqStat `json:"endpoints"`
	}
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/dlq/stats", nil, &st); err != nil {
		c.fail(w, p, err)
		return
	}
	d.Stats = st.Endpoints
	v := url.Values{"limit": {"100"}}
	for k, s := range map[string]string{"endpoint": d.Endpoint, "since": d.Since, "until": d.Until} {
		if s != "" {
			v.Set(k, s)
		}
	}
	var list struct {
		Entries []dlqEntry `json:"entries"`
	}
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/dlq?"+v.Encode(), nil, &list); err != nil {
		c.fail(w, p, err)
		return
	}
	d.Entries = list.Entries
	p.Data = d
	c.render(w, http.StatusOK, "dlq", p)
}

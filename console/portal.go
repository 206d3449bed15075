package console

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
)

// createPortalSession is POST /api/v1/portal/sessions: {"tenant", "ttl",
// "read_only"} -> 201 {"url", "expires_at", "tenant", "read_only"}. It
// needs the admin token like every admin route.
func (c *Console) createPortalSession(w http.ResponseWriter, r *http.Request) {
	if !c.bearerOK(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="hookjet"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "missing or wrong bearer token"})
		return
	}
	var req struct {
		Tenant   string `json:"tenant"`
		TTL      string `json:"ttl"`
		ReadOnly bool   `json:"read_only"`
	}
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 8<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		p := api.DecodeProblem(err, `a JSON object is required, such as {"tenant": "acme", "ttl": "1h"}`)
		status := http.StatusBadRequest
		if _, large := errors.AsType[*http.MaxBytesError](err); large {
			status, p = http.StatusRequestEntityTooLarge, api.FieldProblem("body", "larger than 8192 bytes")
		}
		writeJSON(w, status, api.Answer(p))
		return
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		writeJSON(w, http.StatusBadRequest, api.Answer(api.FieldProblem("body", "must hold one JSON object and nothing after it")))
		return
	}
	// The tenant rule of endpoints and events: a session of a name no
	// endpoint or event can carry would see nothing, or, if the rules
	// ever differed, another tenant's endpoints.
	if err := config.CheckTenant(req.Tenant); err != nil {
		p := api.FieldProblem("tenant", err.Error())
		if req.Tenant == "" {
			p = api.FieldProblem("tenant", "required: a session sees that tenant's endpoints only")
		}
		writeJSON(w, http.StatusBadRequest, api.Answer(p))
		return
	}
	ttl := defaultPortalTTL
	if req.TTL != "" {
		d, err := time.ParseDuration(req.TTL)
		if err != nil || d <= 0 || d > maxPortalTTL {
			writeJSON(w, http.StatusBadRequest, api.Answer(api.FieldProblem("ttl", "want a Go duration above 0s and at most 168h (7 days), such as 1h")))
			return
		}
		ttl = d
	}
	exp := c.now().Add(ttl).Truncate(time.Second)
	token := c.portal.issue(session{Kind: kindPortal, Tenant: req.Tenant, ReadOnly: req.ReadOnly, Expires: exp.Unix()})
	writeJSON(w, http.StatusCreated, map[string]any{
		"url":        c.portalBase(r) + "/portal/s/" + token + "/",
		"expires_at": exp.UTC().Format(time.RFC3339),
		"tenant":     req.Tenant,
		"read_only":  req.ReadOnly,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// portalRoutes serves /portal/.
func (c *Console) portalRoutes() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /portal/static/", http.StripPrefix("/portal/static/", c.static))
	mux.Handle("GET /portal/s/{token}/{$}", c.customer(c.portalHome))
	mux.Handle("POST /portal/s/{token}/endpoints", c.customer(c.portalCreate))
	mux.Handle("GET /portal/s/{token}/endpoints/{id}", c.customer(c.portalEndpoint))
	mux.Handle("POST /portal/s/{token}/endpoints/{id}/{action}", c.customer(c.portalAction))
	mux.Handle("GET /portal/s/{token}/event-types", c.customer(c.portalCatalogue))
	mux.Handle("GET /portal/s/{token}/events", c.customer(c.portalEvents))
	mux.Handle("GET /portal/s/{token}/events/{id}", c.customer(c.portalEventPage))
	mux.HandleFunc("/portal/", func(w http.ResponseWriter, r *http.Request) {
		p := c.newPage(r, "Link needed")
		p.Area, p.Static = "portal", "/portal/static"
		p.Error = "Open the portal with the link you were given; ask for a new one if it has expired."
		c.render(w, http.StatusUnauthorized, "error", p)
	})
	return timed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.headers(w, c.cspP)
		mux.ServeHTTP(w, r)
	}))
}

// customer runs h for a valid, unexpired portal session. A POST needs a
// session that may change things, this origin and the CSRF token.
func (c *Console) customer(h func(http.ResponseWriter, *http.Request, *page, session)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := c.newPage(r, "")
		p.Area, p.Static = "portal", "/portal/static"
		token := r.PathValue("token")
		sess, err := c.portal.check(token, kindPortal, c.now())
		if err != nil {
			p.Title = "Link expired"
			p.Error = "This portal link has expired or is not valid. Ask for a new link."
			c.render(w, http.StatusUnauthorized, "error", p)
			return
		}
		p.Base = "/portal/s/" + token
		p.Tenant, p.ReadOnly, p.Expires = sess.Tenant, sess.ReadOnly, time.Unix(sess.Expires, 0)
		p.CSRF = c.portal.csrf(sess)
		if r.Method != http.MethodGet {
			if sess.ReadOnly {
				p.Error = "This is a read-only session: it cannot change anything."
				c.render(w, http.StatusForbidden, "error", p)
				return
			}
			if !c.formOK(w, r, c.portal, sess) {
				p.Error = "This form did not come from this portal's page (CSRF check): reload the page and try again."
				c.render(w, http.StatusForbidden, "error", p)
				return
			}
		}
		p.Flash = flash(r.URL.Query())
		h(w, r, p, sess)
	})
}

type portalHomeData struct {
	Endpoints []endpoint
	Next      string
	Form      url.Values
	// AllowTransforms shows the transform field (portal.allow_transforms).
	AllowTransforms bool
	// Destinations are the destination types offered (portal.destinations).
	Destinations []string
	// Types is the event-type catalogue (nil without one).
	Types catalogue
}

// Picker is the create form's event-type field, with what was sent.
func (d portalHomeData) Picker() typePicker {
	return typePicker{Types: d.Types, Chosen: formEvents(d.Form)}
}

// portalHome lists the tenant's endpoints, with the form that creates one.
func (c *Console) portalHome(w http.ResponseWriter, r *http.Request, p *page, sess session) {
	c.renderPortalHome(w, r, p, sess, http.StatusOK, url.Values{})
}

func (c *Console) renderPortalHome(w http.ResponseWriter, r *http.Request, p *page, sess session, status int, form url.Values) {
	p.Title = "Your webhook endpoints"
	v := url.Values{"tenant": {sess.Tenant}, "limit": {strconv.Itoa(pageSize)}}
	if a := r.URL.Query().Get("after"); a != "" {
		v.Set("after", a)
	}
	var pg endpointPage
	if _, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/endpoints?"+v.Encode(), nil, &pg); err != nil {
		c.fail(w, p, err)
		return
	}
	d := portalHomeData{Next: pg.Next, Form: form, AllowTransforms: c.o.AllowTransforms, Destinations: c.destinations(), Types: c.catalogue(r.Context())}
	for _, e := range pg.Endpoints {
		if e.Tenant == sess.Tenant { // the API filtered; checked again
			d.Endpoints = append(d.Endpoints, e)
		}
	}
	p.Data = d
	c.render(w, status, "portal_home", p)
}

// portalCreate creates an endpoint in the session's tenant and shows its
// secret once.
func (c *Console) portalCreate(w http.ResponseWriter, r *http.Request, p *page, sess session) {
	body, err := c.portalCreateBody(r.PostForm)
	if err != nil {
		p.Error = "Not created: " + err.Error()
		c.renderPortalHome(w, r, p, sess, formStatus(err), r.PostForm)
		return
	}
	body["tenant"] = sess.Tenant
	var ep endpoint
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/endpoints", body, &ep); err != nil {
		p.Error = "Not created: " + customerWords(err.Error())
		c.renderPortalHome(w, r, p, sess, statusOf(err), r.PostForm)
		return
	}
	p.Title = "Endpoint created"
	p.Data = secretData{Endpoint: ep.ID, Secret: ep.Secret, Back: p.Base + "/endpoints/" + url.PathEscape(ep.ID)}
	c.render(w, http.StatusCreated, "secret", p)
}

// portalCreateBody is the API body of the create form: the fields a
// portal session may set, its event types, headers, authentication and
// destination.
func (c *Console) portalCreateBody(f url.Values) (map[string]any, error) {
	if f.Has("transform") && strings.TrimSpace(f.Get("transform")) != "" && !c.o.AllowTransforms {
		return nil, fmt.Errorf("transform: transformations are %w", errNotOffered)
	}
	body := endpointBody(f, c.portalFields("url", "description")...)
	if ev := formEvents(f); len(ev) > 0 {
		body["events"] = ev
	}
	a, err := portalAuth(f)
	if err != nil {
		return nil, err
	}
	if a != nil {
		body["auth"] = a
	}
	h, err := formHeaders(f)
	if err != nil {
		return nil, err
	}
	if len(h) > 0 {
		body["headers"] = h
	}
	dest, err := c.formDestination(f, "webhook")
	if err != nil {
		return nil, err
	}
	if dest != nil {
		body["destination"] = dest
		delete(body, "url")
	}
	return body, nil
}

// owned returns the endpoint when it belongs to the session's tenant, and
// answers 404 otherwise: another tenant's endpoint does not exist here.
func (c *Console) owned(w http.ResponseWriter, r *http.Request, p *page, sess session) (endpoint, bool) {
	id := r.PathValue("id")
	var ep endpoint
	_, err := c.api.call(r.Context(), http.MethodGet, "/api/v1/endpoints/"+url.PathEscape(id), nil, &ep)
	if (err == nil && ep.Tenant != sess.Tenant) || notFound(err) {
		p.Title = "Not found"
		p.Error = "There is no endpoint " + id + "."
		c.render(w, http.StatusNotFound, "error", p)
		return endpoint{}, false
	}
	if err != nil {
		c.fail(w, p, err)
		return endpoint{}, false
	}
	return ep, true
}

type portalEndpointData struct {
	E           endpoint
	Attempts    []attempt
	Volume      volume // deliveries and failures per hour over 24 h
	LogError    string
	DeadLetters []dlqEntry
	Event       string
	// ResponsesHidden says the response excerpts were left out: the
	// endpoint's address may be inside the platform's network.
	ResponsesHidden bool
	// AllowTransforms shows the transform field (portal.allow_transforms).
	AllowTransforms bool
	// Destinations are the destination types offered (portal.destinations).
	Destinations []string
	// Test is the filter or transform test just run, or refused.
	Test *codeTest
	// Types is the event-type catalogue (nil without one): the test
	// button's choices and the edit form's boxes.
	Types catalogue
}

// TestForm is the test forms' last input; nil before a test.
func (d portalEndpointData) TestForm() url.Values {
	if d.Test == nil {
		return nil
	}
	return d.Test.Form
}

// Picker is the edit form's event-type field.
func (d portalEndpointData) Picker() typePicker {
	return typePicker{Types: d.Types, Chosen: d.E.Events}
}

// TestTypes are the types the test button offers: the catalogue's, then
// the endpoint's patterns that name one type (no wildcard).
func (d portalEndpointData) TestTypes() []string {
	var out []string
	for _, t := range d.Types {
		out = append(out, t.Name)
	}
	for _, e := range d.E.Events {
		if !strings.ContainsAny(e, "*>") && !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// portalFields are the endpoint fields a portal session may set: fields,
// the filter, and the transform when portal.allow_transforms.
func (c *Console) portalFields(fields ...string) []string {
	fields = append(fields, "filter")
	if c.o.AllowTransforms {
		fields = append(fields, "transform")
	}
	return fields
}

// portalEndpoint shows one of the tenant's endpoints: its attempts and
// dead letters, and the buttons for a test event, rotation and replay.
func (c *Console) portalEndpoint(w http.ResponseWriter, r *http.Request, p *page, sess session) {
	c.renderPortalEndpoint(w, r, p, sess, http.StatusOK)
}

func (c *Console) renderPortalEndpoint(w http.ResponseWriter, r *http.Request, p *page, sess session, status int) {
	c.renderPortalEndpointWith(w, r, p, sess, status, nil)
}

// renderPortalEndpointWith renders the endpoint page, with more set by
// fill (a test's answer, a form's input) when it is not nil.
func (c *Console) renderPortalEndpointWith(w http.ResponseWriter, r *http.Request, p *page, sess session, status int, fill func(*portalEndpointData)) {
	ep, ok := c.owned(w, r, p, sess)
	if !ok {
		return
	}
	d := portalEndpointData{E: ep, Event: r.URL.Query().Get("event"), AllowTransforms: c.o.AllowTransforms, Destinations: c.destinations()}
	ctx := r.Context()
	id := url.PathEscape(ep.ID)
	var pg attemptPage
	_, err := c.api.call(ctx, http.MethodGet, "/api/v1/endpoints/"+id+"/attempts?limit=100", nil, &pg)
	if err == nil {
		d.Volume, err = c.loadVolume(ctx, ep.ID, c.now())
	}
	switch {
	case missingRoute(err):
		d.LogError = "The delivery history is not available here."
	case err != nil:
		d.LogError = "The delivery history could not be read: " + customerWords(err.Error())
	}
	d.Attempts = pg.Attempts
	for i := range d.Attempts {
		a := &d.Attempts[i]
		if a.Class == "parked" { // not a request: say why it waits
			a.Class, a.Reason = "waiting", customerReason(a.Reason)
		}
		a.Error = customerWords(a.Error)
	}
	var list struct {
		Entries []dlqEntry `json:"entries"`
	}
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/dlq?limit=100&endpoint="+url.QueryEscape(ep.ID), nil, &list); err != nil {
		c.fail(w, p, err)
		return
	}
	d.DeadLetters = list.Entries
	for i := range d.DeadLetters {
		d.DeadLetters[i].LastError = customerWords(d.DeadLetters[i].LastError)
	}
	if c.o.HideResponses != nil && c.o.HideResponses(ep.URL) {
		d.ResponsesHidden = true
		for i := range d.Attempts {
			d.Attempts[i].Response = ""
		}
		for i := range d.DeadLetters {
			d.DeadLetters[i].LastResponse = ""
		}
	}
	d.Types = c.catalogue(ctx)
	if fill != nil {
		fill(&d)
	}
	p.Title = "Endpoint " + ep.ID
	p.Data = d
	c.render(w, status, "portal_endpoint", p)
}

// portalAction runs a button of a portal endpoint page.
func (c *Console) portalAction(w http.ResponseWriter, r *http.Request, p *page, sess session) {
	ep, ok := c.owned(w, r, p, sess)
	if !ok {
		return
	}
	ctx := r.Context()
	api := "/api/v1/endpoints/" + url.PathEscape(ep.ID)
	back := p.Base + "/endpoints/" + url.PathEscape(ep.ID)
	var err error
	switch r.PathValue("action") {
	case "test":
		var res struct {
			EventID string `json:"event_id"`
		}
		var body map[string]any
		if body, err = c.testBody(ctx, r.PostForm); err == nil {
			if _, err = c.api.call(ctx, http.MethodPost, api+"/test", body, &res); err == nil {
				http.Redirect(w, r, back+"?done=test&event="+url.QueryEscape(res.EventID), http.StatusSeeOther)
				return
			}
		}
	case "edit":
		if err = c.portalEdit(r, ep); err == nil {
			http.Redirect(w, r, back+"?done=updated", http.StatusSeeOther)
			return
		}
	case "enable", "disable":
		if _, err = c.api.call(ctx, http.MethodPost, api+"/"+r.PathValue("action"), nil, nil); err == nil {
			http.Redirect(w, r, back+"?done="+r.PathValue("action")+"d", http.StatusSeeOther)
			return
		}
	case "delete":
		c.portalDelete(w, r, p, sess, ep)
		return
	case "filter-test":
		c.portalCodeTest(w, r, p, sess, ep, "filter")
		return
	case "transform-test":
		c.portalCodeTest(w, r, p, sess, ep, "transform")
		return
	case "rotate":
		var res struct {
			Secret string `json:"secret"`
		}
		if _, err = c.api.call(ctx, http.MethodPost, api+"/secret/rotate", map[string]any{}, &res); err == nil {
			p.Title = "New secret"
			p.Data = secretData{Endpoint: ep.ID, Secret: res.Secret, Rotated: true, Back: back}
			c.render(w, http.StatusOK, "secret", p)
			return
		}
	case "replay":
		var res replayResult
		var req replayForm
		if res, req, err = c.replay(r, ep.ID); err == nil {
			if req.confirm {
				http.Redirect(w, r, back+"?done=replayed", http.StatusSeeOther)
				return
			}
			p.Title = "Replay dead letters"
			p.Data = req.confirmPage(back+"/replay", back, res.Matched)
			c.render(w, http.StatusOK, "confirm", p)
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	p.Error = customerWords(err.Error())
	c.renderPortalEndpoint(w, r, p, sess, formStatus(err))
}

// portalAuth is the auth a tenant chose in the portal's form: basic,
// bearer or OAuth2 client credentials, with the fields of that type
// alone; nil for none. mTLS and the egress proxy are the operator's.
func portalAuth(f url.Values) (map[string]any, error) {
	typ := strings.TrimSpace(f.Get("auth_type"))
	if typ == "" || typ == "none" {
		return nil, nil
	}
	fields, ok := map[string][]string{
		"basic":  {"username", "password"},
		"bearer": {"token"},
		"oauth2": {"token_url", "client_id", "client_secret", "audience"},
	}[typ]
	if !ok {
		return nil, formError("authentication: must be none, basic, bearer or OAuth2")
	}
	a := map[string]any{"type": typ}
	for _, k := range fields {
		if v := strings.TrimSpace(f.Get("auth_" + k)); v != "" {
			a[k] = v
		}
	}
	if typ == "oauth2" {
		if s := strings.Fields(f.Get("auth_scopes")); len(s) > 0 {
			a["scopes"] = s
		}
	}
	return a, nil
}

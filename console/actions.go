package console

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// secretData is the page that shows a new signing secret, the only time
// it is ever shown.
type secretData struct {
	Endpoint string
	Secret   string
	Rotated  bool
	Back     string
}

// confirmData is the second step of a replay or redelivery: what the dry
// run matched and a button that does it.
type confirmData struct {
	Action  string
	Fields  [][2]string
	What    string
	Matched int
	Back    string
	Verb    string // the confirm button's verb; empty: send
}

// patterns splits an events field on commas and white space.
func patterns(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\n' || r == '\r' || r == '\t' })
}

// endpointBody is the JSON of the create form's fields; empty fields are
// left to the API's defaults.
func endpointBody(f url.Values, keys ...string) map[string]any {
	body := map[string]any{}
	for _, k := range keys {
		v := strings.TrimSpace(f.Get(k))
		switch {
		case v == "":
		case k == "events":
			body[k] = patterns(v)
		default:
			body[k] = v
		}
	}
	return body
}

// createEndpoint creates an endpoint from the endpoints page's form and
// shows its secret once.
func (c *Console) createEndpoint(w http.ResponseWriter, r *http.Request, p *page) {
	body := endpointBody(r.PostForm, "id", "url", "events", "tenant", "description", "owner", "ordering", "ordering_on_dead_letter", "filter", "transform")
	var ep endpoint
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/endpoints", body, &ep); err != nil {
		p.Error = "Not created: " + err.Error()
		c.renderEndpoints(w, r, p, statusOf(err), r.PostForm)
		return
	}
	p.Title = "Endpoint " + ep.ID + " created"
	p.Data = secretData{Endpoint: ep.ID, Secret: ep.Secret, Back: "/console/endpoints/" + url.PathEscape(ep.ID)}
	c.render(w, http.StatusCreated, "secret", p)
}

// endpointAction runs one of the endpoint page's buttons.
func (c *Console) endpointAction(w http.ResponseWriter, r *http.Request, p *page) {
	ctx := r.Context()
	id := r.PathValue("id")
	api := "/api/v1/endpoints/" + url.PathEscape(id)
	back := "/console/endpoints/" + url.PathEscape(id)
	var err error
	done := ""
	switch r.PathValue("action") {
	case "enable", "disable":
		done = r.PathValue("action") + "d"
		_, err = c.api.call(ctx, http.MethodPost, api+"/"+r.PathValue("action"), nil, nil)
	case "reset":
		done = "reset"
		_, err = c.api.call(ctx, http.MethodPost, api+"/breaker/reset", nil, nil)
	case "test":
		var res struct {
			EventID string `json:"event_id"`
		}
		if _, err = c.api.call(ctx, http.MethodPost, api+"/test", map[string]any{}, &res); err == nil {
			http.Redirect(w, r, back+"?done=test&event="+url.QueryEscape(res.EventID), http.StatusSeeOther)
			return
		}
	case "rotate":
		c.rotate(w, r, p, id, back)
		return
	case "redeliver":
		c.redeliver(w, r, p, id, back)
		return
	case "edit":
		done = "updated"
		err = c.edit(r, id)
	case "filter-test", "transform-test":
		c.runCodeTest(w, r, p, id, strings.TrimSuffix(r.PathValue("action"), "-test"))
		return
	case "delete":
		if _, err = c.api.call(ctx, http.MethodDelete, api, nil, nil); err == nil {
			http.Redirect(w, r, "/console/endpoints?done=deleted", http.StatusSeeOther)
			return
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		p.Error = err.Error()
		if missingRoute(err) {
			p.Error = "This hookjet does not have that action yet."
		}
		c.renderEndpoint(w, r, p, statusOf(err))
		return
	}
	http.Redirect(w, r, back+"?done="+done, http.StatusSeeOther)
}

// edit sends the fields of the edit form that changed.
func (c *Console) edit(r *http.Request, id string) error {
	ctx := r.Context()
	var cur endpoint
	if _, err := c.api.call(ctx, http.MethodGet, "/api/v1/endpoints/"+url.PathEscape(id), nil, &cur); err != nil {
		return err
	}
	f := r.PostForm
	patch := map[string]any{}
	for k, old := range map[string]string{"url": cur.URL, "tenant": cur.Tenant, "description": cur.Description, "owner": cur.Owner, "filter": cur.Filter, "transform": strings.TrimSpace(cur.Transform)} {
		if v := strings.TrimSpace(f.Get(k)); f.Has(k) && v != old {
			patch[k] = v
		}
	}
	if ev := patterns(f.Get("events")); f.Has("events") && !slices.Equal(ev, cur.Events) {
		patch["events"] = ev
	}
	ordering, onDead := "none", cur.Settings.OnDeadLetter()
	if cur.Settings.Ordered() {
		ordering = "key"
	}
	for k, old := range map[string]string{"ordering": ordering, "ordering_on_dead_letter": onDead} {
		if v := strings.TrimSpace(f.Get(k)); f.Has(k) && v != old {
			patch[k] = v
		}
	}
	if len(patch) == 0 {
		return nil
	}
	_, err := c.api.call(ctx, http.MethodPatch, "/api/v1/endpoints/"+url.PathEscape(id), patch, nil)
	return err
}

func (c *Console) rotate(w http.ResponseWriter, r *http.Request, p *page, id, back string) {
	body := map[string]any{}
	if g := strings.TrimSpace(r.PostForm.Get("grace")); g != "" {
		body["grace"] = g
	}
	var res struct {
		Secret string `json:"secret"`
	}
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/endpoints/"+url.PathEscape(id)+"/secret/rotate", body, &res); err != nil {
		p.Error = "Not rotated: " + err.Error()
		c.renderEndpoint(w, r, p, statusOf(err))
		return
	}
	p.Title = "New secret for " + id
	p.Data = secretData{Endpoint: id, Secret: res.Secret, Rotated: true, Back: back}
	c.render(w, http.StatusOK, "secret", p)
}

// redeliver counts the stored events of a window first (dry run) and
// queues them once confirmed.
func (c *Console) redeliver(w http.ResponseWriter, r *http.Request, p *page, id, back string) {
	f := r.PostForm
	confirm := f.Get("step") == "confirm"
	body := map[string]any{"since": strings.TrimSpace(f.Get("since")), "dry_run": !confirm}
	if u := strings.TrimSpace(f.Get("until")); u != "" {
		body["until"] = u
	}
	var res replayResult
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/endpoints/"+url.PathEscape(id)+"/redeliver", body, &res); err != nil {
		p.Error = "Not redelivered: " + err.Error()
		c.renderEndpoint(w, r, p, statusOf(err))
		return
	}
	if confirm {
		http.Redirect(w, r, back+"?done=redelivered", http.StatusSeeOther)
		return
	}
	p.Title = "Redeliver to " + id
	p.Data = confirmData{
		Action:  back + "/redeliver",
		Fields:  [][2]string{{"since", f.Get("since")}, {"until", f.Get("until")}, {"step", "confirm"}},
		What:    "stored events would be delivered again to " + id + " with their original webhook-id",
		Matched: res.Matched, Back: back,
	}
	c.render(w, http.StatusOK, "confirm", p)
}

// dlqReplay replays dead letters: a dry run first, then, confirmed, for
// real.
func (c *Console) dlqReplay(w http.ResponseWriter, r *http.Request, p *page) {
	res, req, err := c.replay(r, "")
	if err != nil {
		p.Error = "Not replayed: " + err.Error()
		p.Title = "Dead letters"
		c.render(w, statusOf(err), "error", p)
		return
	}
	if req.confirm {
		http.Redirect(w, r, "/console/dlq?done=replayed&endpoint="+url.QueryEscape(req.endpoint), http.StatusSeeOther)
		return
	}
	p.Title = "Replay dead letters"
	p.Data = req.confirmPage("/console/dlq/replay", "/console/dlq", res.Matched)
	c.render(w, http.StatusOK, "confirm", p)
}

// dlqDiscard discards dead letters: a dry run first, then, confirmed, for
// good. The filter must name something (the API refuses an empty one).
func (c *Console) dlqDiscard(w http.ResponseWriter, r *http.Request, p *page) {
	f := r.PostForm
	req := replayForm{endpoint: strings.TrimSpace(f.Get("endpoint")), since: strings.TrimSpace(f.Get("since")),
		until: strings.TrimSpace(f.Get("until")), ids: f["ids"], confirm: f.Get("step") == "confirm"}
	body := map[string]any{"dry_run": !req.confirm}
	for k, v := range map[string]string{"endpoint": req.endpoint, "since": req.since, "until": req.until} {
		if v != "" {
			body[k] = v
		}
	}
	if len(req.ids) > 0 {
		body["ids"] = req.ids
	}
	var res struct {
		Matched   int `json:"matched"`
		Discarded int `json:"discarded"`
	}
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/dlq/discard", body, &res); err != nil {
		p.Error = "Not discarded: " + err.Error()
		p.Title = "Dead letters"
		c.render(w, statusOf(err), "error", p)
		return
	}
	if req.confirm {
		http.Redirect(w, r, "/console/dlq?done=discarded&endpoint="+url.QueryEscape(req.endpoint), http.StatusSeeOther)
		return
	}
	p.Title = "Discard dead letters"
	d := req.confirmPage("/console/dlq/discard", "/console/dlq", res.Matched)
	d.What = "dead letters would be deleted for good (never delivered; the delivery log records them as discarded)"
	if req.endpoint != "" {
		d.What = "dead letters of " + req.endpoint + " would be deleted for good (never delivered; the delivery log records them as discarded)"
	}
	d.Verb = "discard"
	p.Data = d
	c.render(w, http.StatusOK, "confirm", p)
}

// replayForm is a replay request read from a form.
type replayForm struct {
	endpoint, since, until string
	ids                    []string
	confirm                bool
}

func (f replayForm) confirmPage(action, back string, matched int) confirmData {
	fields := [][2]string{{"endpoint", f.endpoint}, {"since", f.since}, {"until", f.until}, {"step", "confirm"}}
	for _, id := range f.ids {
		fields = append(fields, [2]string{"ids", id})
	}
	what := "dead letters would be sent again (same webhook-id, fresh attempts)"
	if f.endpoint != "" {
		what = "dead letters of " + f.endpoint + " would be sent again (same webhook-id, fresh attempts)"
	}
	return confirmData{Action: action, Fields: fields, What: what, Matched: matched, Back: back}
}

// replay calls POST /api/v1/dlq/replay with the form's filter; endpoint,
// when set, overrides the form's (the portal's endpoint pages).
func (c *Console) replay(r *http.Request, endpoint string) (replayResult, replayForm, error) {
	f := r.PostForm
	req := replayForm{endpoint: strings.TrimSpace(f.Get("endpoint")), since: strings.TrimSpace(f.Get("since")),
		until: strings.TrimSpace(f.Get("until")), ids: f["ids"], confirm: f.Get("step") == "confirm"}
	if endpoint != "" {
		req.endpoint = endpoint
	}
	body := map[string]any{"dry_run": !req.confirm}
	for k, v := range map[string]string{"endpoint": req.endpoint, "since": req.since, "until": req.until} {
		if v != "" {
			body[k] = v
		}
	}
	if len(req.ids) > 0 {
		body["ids"] = req.ids
	}
	var res replayResult
	_, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/dlq/replay", body, &res)
	return res, req, err
}

// statusOf is the status of an admin API error, 502 for another.
func statusOf(err error) int {
	if ae, ok := errors.AsType[*apiError](err); ok && ae.Status >= 400 {
		return ae.Status
	}
	return http.StatusBadGateway
}

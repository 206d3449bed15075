package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// The portal's filter and transform tests: the forms of an endpoint page
// call the admin API's POST /api/v1/endpoints/{id}/filter/test and
// /transform/test with the endpoint the session owns. An event_id finds
// only the tenant's own events there (the API looks an event up for an
// endpoint of a tenant in that tenant alone).

// codeResult is what a filter or transform test answered, for the page.
type codeResult struct {
	Kind    string // "filter" or "transform"
	Match   bool   // filter: the endpoint would receive the event
	Cancel  bool   // transform: the script cancels the delivery
	Error   string // why the code failed (no match, or a dead letter)
	Request *requestShape
}

// requestShape is the request a delivery would make (transform test).
type requestShape struct {
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

// HeaderNames are the request's header names, sorted.
func (s *requestShape) HeaderNames() []string {
	names := make([]string, 0, len(s.Headers))
	for k := range s.Headers {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// codeTestBody is the API body of a test form: a stored event by id, or
// an inline one of a type and a JSON payload, and the code to try.
func codeTestBody(f url.Values, kind string) (map[string]any, error) {
	body := map[string]any{}
	if id := strings.TrimSpace(f.Get("event_id")); id != "" {
		body["event_id"] = id
	} else {
		typ := strings.TrimSpace(f.Get("test_type"))
		if typ == "" {
			return nil, formError("event: give an event id, or an event type and its payload")
		}
		ev := map[string]any{"type": typ}
		if data := strings.TrimSpace(f.Get("test_data")); data != "" {
			if !json.Valid([]byte(data)) {
				return nil, formError(`payload: not JSON; write it as a JSON value such as {"amount": 1200}`)
			}
			ev["data"] = json.RawMessage(data)
		}
		body["event"] = ev
	}
	if f.Has(kind) {
		body[kind] = f.Get(kind)
	}
	return body, nil
}

// portalCodeTest runs the filter or transform test of an endpoint page's
// form and shows the page again with its answer.
func (c *Console) portalCodeTest(w http.ResponseWriter, r *http.Request, p *page, sess session, ep endpoint, kind string) {
	if kind == "transform" && !c.o.AllowTransforms {
		p.Error = "Transformations are not offered here."
		c.renderPortalEndpoint(w, r, p, sess, http.StatusForbidden)
		return
	}
	body, err := codeTestBody(r.PostForm, kind)
	if err != nil {
		p.Error = "Not tested: " + err.Error()
		c.renderPortalEndpointWith(w, r, p, sess, formStatus(err), func(d *portalEndpointData) { d.TestForm = r.PostForm })
		return
	}
	res := codeResult{Kind: kind}
	var answer struct {
		Match   bool          `json:"match"`
		Cancel  bool          `json:"cancel"`
		Error   string        `json:"error"`
		Request *requestShape `json:"request"`
	}
	if _, err := c.api.call(r.Context(), http.MethodPost, "/api/v1/endpoints/"+url.PathEscape(ep.ID)+"/"+kind+"/test", body, &answer); err != nil {
		p.Error = "Not tested: " + customerWords(err.Error())
		if notFound(err) {
			p.Error = "Not tested: there is no event " + strings.TrimSpace(r.PostForm.Get("event_id")) + " of yours."
		}
		c.renderPortalEndpointWith(w, r, p, sess, statusOf(err), func(d *portalEndpointData) { d.TestForm = r.PostForm })
		return
	}
	res.Match, res.Cancel, res.Error, res.Request = answer.Match, answer.Cancel, customerWords(answer.Error), answer.Request
	c.renderPortalEndpointWith(w, r, p, sess, http.StatusOK, func(d *portalEndpointData) {
		d.TestForm, d.CodeResult = r.PostForm, &res
	})
}

// testEventType is the type of the test event without a chosen type.
const testEventType = "hookjet.test"

// testBody is the API body of the test button's form: a hookjet.test
// event, or an event of the chosen type with the payload typed, else the
// catalogue's first example of that type, else {}.
func (c *Console) testBody(ctx context.Context, f url.Values) (map[string]any, error) {
	typ := strings.TrimSpace(f.Get("test_type"))
	if typ == "" || typ == testEventType {
		return map[string]any{}, nil
	}
	data := json.RawMessage(strings.TrimSpace(f.Get("test_data")))
	if len(data) > 0 && !json.Valid(data) {
		return nil, formError(`payload: not JSON; write it as a JSON value such as {"amount": 1200}`)
	}
	if len(data) == 0 {
		data = json.RawMessage("{}")
		if t, ok := c.catalogue(ctx).find(typ); ok && len(t.Examples) > 0 {
			data = t.Examples[0]
		}
	}
	return map[string]any{"type": typ, "data": data}, nil
}

package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/hookjet/hookjet/api"
)

// portalCodeTest runs the filter or transform test of kind from a portal
// endpoint page's form on ep, the session's tenant's (the API finds an
// event id among that tenant's events alone), and shows the page again
// with its answer in the customer's words. A transform is tested only
// with portal.allow_transforms.
func (c *Console) portalCodeTest(w http.ResponseWriter, r *http.Request, p *page, sess session, ep endpoint, kind string) {
	if kind == "transform" && !c.o.AllowTransforms {
		p.Error = "Transformations are not offered here."
		c.renderPortalEndpoint(w, r, p, sess, http.StatusForbidden)
		return
	}
	t, err := c.testCode(r.Context(), ep.ID, kind, r.PostForm, portalCodeForm)
	_, mistake := errors.AsType[formError](err)
	switch {
	case mistake:
		p.Error = "Not tested: " + err.Error()
	case notFound(err):
		p.Error = "Not tested: there is no event " + t.Field("event_id") + " of yours."
	case err != nil:
		p.Error = "Not tested: " + customerWords(err.Error())
	default:
		t.Result.Error = customerWords(t.Result.Error)
	}
	status := http.StatusOK
	if err != nil {
		status = formStatus(err)
	}
	c.renderPortalEndpointWith(w, r, p, sess, status, func(d *portalEndpointData) { d.Test = t })
}

// portalCodeForm reads the portal's test form: event_id, else an event of
// test_type with test_data as its JSON payload; and the candidate as it
// is given, even empty (the form shows the endpoint's own to start with).
func portalCodeForm(f url.Values, kind string) (api.CodeTest, error) {
	var req api.CodeTest
	if id := strings.TrimSpace(f.Get("event_id")); id != "" {
		req.EventID = id
	} else {
		typ := strings.TrimSpace(f.Get("test_type"))
		if typ == "" {
			return req, formError("event: give an event id, or an event type and its payload")
		}
		data, err := testPayload(f)
		if err != nil {
			return req, err
		}
		req.Event = &api.TestEvent{Type: typ, Data: data}
	}
	if f.Has(kind) {
		tryCode(&req, kind, f.Get(kind))
	}
	return req, nil
}

// testPayload is the payload a portal form typed (test_data): JSON, or
// nil when the field is empty.
func testPayload(f url.Values) (json.RawMessage, error) {
	data := json.RawMessage(strings.TrimSpace(f.Get("test_data")))
	if len(data) > 0 && !json.Valid(data) {
		return nil, formError(`payload: not JSON; write it as a JSON value such as {"amount": 1200}`)
	}
	return data, nil
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
	data, err := testPayload(f)
	if err != nil {
		return nil, err
	}
	if len(data) == 0 {
		data = json.RawMessage("{}")
		if t, ok := c.catalogue(ctx).find(typ); ok && len(t.Examples) > 0 {
			data = t.Examples[0]
		}
	}
	return map[string]any{"type": typ, "data": data}, nil
}

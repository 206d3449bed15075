package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/hookjet/hookjet/api"
)

// codeTest is a filter or transform test the endpoint page shows: the form
// as it was sent, and what the admin API answered (the same tests as POST
// /api/v1/endpoints/{id}/filter/test and /transform/test).
type codeTest struct {
	// Kind is "filter" or "transform".
	Kind string
	// EventID, Event and Candidate are the form's fields, shown again.
	EventID, Event, Candidate string
	// Filter and Transform are the answer of the test of their kind.
	Filter    *api.FilterTestResult
	Transform *api.TransformTestResult
	// Headers are Transform's request headers, sorted by name.
	Headers []testHeader
	// Error is why the test did not run: the form or the API refused it.
	Error string
}

// testHeader is one header of a transform test's request.
type testHeader struct{ Name, Value string }

// runCodeTest runs the endpoint's filter or transform test of kind on the
// event the form names (event_id, or event: an inline event as JSON), with
// the candidate expression or script when the form gives one, and renders
// the endpoint page with the answer.
func (c *Console) runCodeTest(w http.ResponseWriter, r *http.Request, p *page, id, kind string) {
	t := &codeTest{Kind: kind, EventID: strings.TrimSpace(r.PostForm.Get("event_id")),
		Event: strings.TrimSpace(r.PostForm.Get("event")), Candidate: r.PostForm.Get(kind)}
	status := http.StatusOK
	body, err := t.request()
	if err == nil {
		path := "/api/v1/endpoints/" + url.PathEscape(id) + "/" + kind + "/test"
		if kind == "filter" {
			t.Filter = &api.FilterTestResult{}
			_, err = c.api.call(r.Context(), http.MethodPost, path, body, t.Filter)
		} else {
			t.Transform = &api.TransformTestResult{}
			_, err = c.api.call(r.Context(), http.MethodPost, path, body, t.Transform)
		}
		if err != nil {
			status = statusOf(err)
		}
	} else {
		status = http.StatusBadRequest
	}
	if err != nil {
		t.Filter, t.Transform, t.Error = nil, nil, err.Error()
	}
	if t.Transform != nil && t.Transform.Request != nil {
		for name, v := range t.Transform.Request.Headers {
			t.Headers = append(t.Headers, testHeader{name, v})
		}
		slices.SortFunc(t.Headers, func(a, b testHeader) int { return strings.Compare(a.Name, b.Name) })
	}
	c.renderEndpointWith(w, r, p, status, func(d *endpointData) { d.Test = t })
}

// request is the API's body for t's form.
func (t *codeTest) request() (api.CodeTest, error) {
	var req api.CodeTest
	switch {
	case t.EventID != "" && t.Event != "":
		return req, errors.New("give an event id or an event, not both")
	case t.EventID != "":
		req.EventID = t.EventID
	case t.Event != "":
		dec := json.NewDecoder(bytes.NewReader([]byte(t.Event)))
		dec.DisallowUnknownFields()
		var ev api.TestEvent
		if err := dec.Decode(&ev); err != nil {
			return req, errors.New(`event: want a JSON object such as {"type": "order.created", "data": {"amount": 1500}}: ` + err.Error())
		}
		req.Event = &ev
	default:
		return req, errors.New("give the id of a stored event, or an event as JSON")
	}
	if strings.TrimSpace(t.Candidate) != "" {
		candidate := t.Candidate
		if t.Kind == "filter" {
			req.Filter = &candidate
		} else {
			req.Transform = &candidate
		}
	}
	return req, nil
}

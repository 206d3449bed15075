package console

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/hookjet/hookjet/api"
)

// The filter and transform tests of an endpoint page, the console's and
// the portal's: a form names an event (a stored one by id, or one written
// there) and optionally a candidate filter or script, and the admin API's
// POST /api/v1/endpoints/{id}/filter/test or /transform/test answers
// whether the endpoint would receive the event, the request a delivery
// would send, or the code's error with its line:column. The two pages
// differ in their forms' fields (codeForm), in scope (the portal's
// endpoint is the session's tenant's, so the API finds an event id among
// that tenant's events alone) and in words.

// codeTest is a filter or transform test an endpoint page shows: the form
// as it was sent, and what the admin API answered.
type codeTest struct {
	// Kind is "filter" or "transform".
	Kind string
	// Form is the form as it was sent, shown again.
	Form url.Values
	// Result is the API's answer; nil when the test did not run.
	Result *codeResult
	// Error is why the test did not run, as the console's page shows it
	// (the portal's says it in the customer's words as the page's error).
	Error string
}

// Field is the form's field name as it was sent, without the spaces
// around it.
func (t *codeTest) Field(name string) string { return strings.TrimSpace(t.Form.Get(name)) }

// codeResult answers a filter test (api.FilterTestResult) or a transform
// test (api.TransformTestResult).
type codeResult struct {
	// Match says the endpoint would receive the event (filter).
	Match bool `json:"match"`
	// Cancel says the script cancels the delivery (transform).
	Cancel bool `json:"cancel"`
	// Error is why the filter or the script failed, with its line:column:
	// no match, or a dead letter with reason transform.
	Error string `json:"error"`
	// Request is the request a delivery would send (transform).
	Request *api.TestRequestShape `json:"request"`
}

// testHeader is one header of a transform test's request.
type testHeader struct{ Name, Value string }

// Headers are the request's headers, sorted by name.
func (r *codeResult) Headers() []testHeader {
	if r.Request == nil {
		return nil
	}
	out := make([]testHeader, 0, len(r.Request.Headers))
	for name, v := range r.Request.Headers {
		out = append(out, testHeader{name, v})
	}
	slices.SortFunc(out, func(a, b testHeader) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// codeForm reads a page's test form of kind into the API's body; its
// mistakes are formErrors.
type codeForm func(f url.Values, kind string) (api.CodeTest, error)

// testCode runs the test of kind that form reads from f on endpoint id.
// The test it returns is never nil; the error is the form's (a formError)
// or the API's.
func (c *Console) testCode(ctx context.Context, id, kind string, f url.Values, form codeForm) (*codeTest, error) {
	t := &codeTest{Kind: kind, Form: f}
	req, err := form(f, kind)
	if err != nil {
		return t, err
	}
	var res codeResult
	if _, err := c.api.call(ctx, http.MethodPost, "/api/v1/endpoints/"+url.PathEscape(id)+"/"+kind+"/test", req, &res); err != nil {
		return t, err
	}
	t.Result = &res
	return t, nil
}

// tryCode sets the candidate code of a test of kind.
func tryCode(req *api.CodeTest, kind, code string) {
	if kind == "filter" {
		req.Filter = &code
	} else {
		req.Transform = &code
	}
}

// runCodeTest runs the endpoint's filter or transform test of kind from
// the console's form and renders the endpoint page with the answer.
func (c *Console) runCodeTest(w http.ResponseWriter, r *http.Request, p *page, id, kind string) {
	t, err := c.testCode(r.Context(), id, kind, r.PostForm, consoleCodeForm)
	status := http.StatusOK
	if err != nil {
		t.Error, status = err.Error(), formStatus(err)
	}
	c.renderEndpointWith(w, r, p, status, func(d *endpointData) { d.Test = t })
}

// consoleCodeForm reads the console's test form: event_id, or event (an
// inline event as JSON, the fields of api.TestEvent alone), not both; and
// the candidate when it is not blank (blank: the endpoint's own).
func consoleCodeForm(f url.Values, kind string) (api.CodeTest, error) {
	var req api.CodeTest
	id, ev := strings.TrimSpace(f.Get("event_id")), strings.TrimSpace(f.Get("event"))
	switch {
	case id != "" && ev != "":
		return req, formError("give an event id or an event, not both")
	case id != "":
		req.EventID = id
	case ev != "":
		dec := json.NewDecoder(bytes.NewReader([]byte(ev)))
		dec.DisallowUnknownFields()
		req.Event = &api.TestEvent{}
		if err := dec.Decode(req.Event); err != nil {
			return req, formError(`event: want a JSON object such as {"type": "order.created", "data": {"amount": 1500}}: ` + err.Error())
		}
	default:
		return req, formError("give the id of a stored event, or an event as JSON")
	}
	if code := f.Get(kind); strings.TrimSpace(code) != "" {
		tryCode(&req, kind, code)
	}
	return req, nil
}

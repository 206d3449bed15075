package apicheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	verrors "github.com/pb33f/libopenapi-validator/errors"

	"github.com/hookjet/hookjet/api"
)

// Prefix is the path prefix of the requests [Transport] validates.
const Prefix = "/api/v1/"

// Transport is an http.RoundTripper that validates each request to
// [Prefix] and its answer against the OpenAPI document:
//
//   - a request the document accepts must get an answer the document
//     describes for its route and status (an undocumented status, a missing
//     required field, an extra field where the schema is closed, a wrong
//     type: each fails);
//   - a request the document refuses (a test sending bad input on purpose:
//     an unknown field, a missing required one, a route that does not
//     exist) must be refused by hookjet too, with a 4xx and the API's error
//     object {"error", "field"?, "errors"?}.
//
// A mismatch makes RoundTrip return an error naming it (the caller's Do
// fails), and is kept for [Transport.Failures]. Other requests pass
// through untouched.
type Transport struct {
	base http.RoundTripper
	*shared
}

// shared is what the Transports of one document share.
type shared struct {
	mu       sync.Mutex // the validator, checked and failures
	v        validator.Validator
	checked  int
	failures []string
}

// New returns a Transport over base (nil: http.DefaultTransport as it is
// now) that validates against api.OpenAPI().
func New(base http.RoundTripper) (*Transport, error) {
	return NewFor(api.OpenAPI(), base)
}

// NewFor is [New] with another document, for the tests of this package.
func NewFor(spec []byte, base http.RoundTripper) (*Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	v, errs := validator.NewValidator(doc)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapi: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("openapi: the document is not valid OpenAPI: %s", describe(verrs))
	}
	return &Transport{base: base, shared: &shared{v: v}}, nil
}

// Install makes a Transport over the current http.DefaultTransport the
// default (http.Get, http.DefaultClient and every http.Client without a
// Transport use it) and returns it; the end-to-end tests' TestMain calls it
// and fails the run when [Transport.Failures] is not empty.
func Install() (*Transport, error) {
	t, err := New(http.DefaultTransport)
	if err != nil {
		return nil, err
	}
	http.DefaultTransport = t
	return t, nil
}

// Over returns a Transport over base that shares t's document and
// failures.
func (t *Transport) Over(base http.RoundTripper) *Transport {
	return &Transport{base: base, shared: t.shared}
}

// CloseIdleConnections closes the idle connections of the transport under
// t, when it keeps any.
func (t *Transport) CloseIdleConnections() {
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Checked counts the calls validated so far (by this Transport and those
// made with Over).
func (t *Transport) Checked() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.checked
}

// Failures lists every mismatch seen so far (by this Transport and those
// made with Over).
func (t *Transport) Failures() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.failures...)
}

// RoundTrip sends req and validates it and its answer when its path starts
// with [Prefix].
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasPrefix(req.URL.Path, Prefix) {
		return t.base.RoundTrip(req)
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	send := req.Clone(req.Context())
	send.Body = bodyOf(body)
	resp, err := t.base.RoundTrip(send)
	if err != nil {
		return nil, err
	}
	answer, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	if problem := t.check(req, body, resp, answer); problem != "" {
		msg := fmt.Sprintf("openapi: %s %s -> HTTP %d: %s", req.Method, req.URL.RequestURI(), resp.StatusCode, problem)
		t.mu.Lock()
		t.failures = append(t.failures, msg)
		t.mu.Unlock()
		return nil, errors.New(msg)
	}
	return resp, nil
}

// check validates a request and its answer; it returns what does not
// match the document, or "".
func (t *Transport) check(req *http.Request, body []byte, resp *http.Response, answer []byte) string {
	vreq := req.Clone(req.Context())
	vreq.Body = bodyOf(body)
	vresp := *resp
	vresp.Body = io.NopCloser(bytes.NewReader(answer))
	vresp.Request = vreq
	t.mu.Lock()
	t.checked++
	reqOK, reqErrs := t.v.ValidateHttpRequestSync(vreq)
	var respOK bool
	var respErrs []*verrors.ValidationError
	if reqOK {
		vreq.Body = bodyOf(body)
		respOK, respErrs = t.v.ValidateHttpResponse(vreq, &vresp)
	}
	t.mu.Unlock()
	switch {
	case reqOK && !respOK:
		return "answer: " + describe(respErrs)
	case reqOK:
		return ""
	case resp.StatusCode < 400 || resp.StatusCode >= 500:
		return "the document refuses the request (" + describe(reqErrs) + ") but hookjet did not answer 4xx"
	}
	if err := errorObject(answer); err != nil {
		return "a refused request's answer is not the API's error object: " + err.Error()
	}
	return ""
}

// errorObject checks that b is {"error": "...", "field"?, "errors"?} and
// nothing else.
func errorObject(b []byte) error {
	var e struct {
		Error  *string `json:"error"`
		Field  string  `json:"field"`
		Errors []struct {
			Field string `json:"field"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return err
	}
	if e.Error == nil || *e.Error == "" {
		return errors.New(`"error" is missing or empty`)
	}
	return nil
}

func bodyOf(b []byte) io.ReadCloser {
	if b == nil {
		return http.NoBody
	}
	return io.NopCloser(bytes.NewReader(b))
}

// describe joins validation errors into one line.
func describe(errs []*verrors.ValidationError) string {
	var parts []string
	for _, e := range errs {
		s := e.Message
		if e.Reason != "" {
			s += ": " + e.Reason
		}
		for _, se := range e.SchemaValidationErrors {
			s += " [" + se.FieldPath + ": " + se.Reason + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

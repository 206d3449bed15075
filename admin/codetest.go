package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/endpoints"
	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/transform"
)

// redacted stands for a value the test answers never show.
const redacted = "[redacted]"

// routeCodeTests adds the filter and transform tests.
func (a *handler) routeCodeTests(mux *http.ServeMux) {
	mux.HandleFunc("POST /api/v1/endpoints/{id}/filter/test", a.managed(a.filterTest))
	mux.HandleFunc("POST /api/v1/endpoints/{id}/transform/test", a.managed(a.transformTest))
}

// testedEvent is the event a test runs on.
type testedEvent struct {
	ID, Type, Tenant, Key, ContentType string
	Headers                            map[string][]string
	Data                               []byte
}

// codeTest reads a test's body, the endpoint and the event, answering an
// error itself when it cannot.
func (a *handler) codeTest(w http.ResponseWriter, r *http.Request) (api.CodeTest, config.Endpoint, testedEvent, bool) {
	var req api.CodeTest
	body, ok := readBodyN(w, r, int64(a.cfg().Security.MaxPayloadBytes)+maxBody)
	if !ok {
		return req, config.Endpoint{}, testedEvent{}, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, api.Answer(api.DecodeProblem(err, "body: want a JSON object with event_id or event")))
		return req, config.Endpoint{}, testedEvent{}, false
	}
	ctx, cancel := timeout(r)
	defer cancel()
	ep, err := a.definition(ctx, r.PathValue("id"))
	if err != nil {
		a.failEndpoint(w, r, err)
		return req, config.Endpoint{}, testedEvent{}, false
	}
	ev, ok := a.testEvent(ctx, w, r, req, ep)
	return req, ep, ev, ok
}

// definition returns endpoint id as the engine runs it: the config file's,
// or the API's resolved against the defaults in force.
func (a *handler) definition(ctx context.Context, id string) (config.Endpoint, error) {
	if ep, ok := a.deliveries.ConfigEndpoint(id); ok {
		return ep, nil
	}
	rec, err := a.store.Get(ctx, id)
	if err != nil {
		return config.Endpoint{}, err
	}
	spec, err := a.store.Spec(rec)
	if err != nil {
		return config.Endpoint{}, err
	}
	return config.ResolveEndpoint(a.cfg().Defaults, endpoints.DropExpiredSecrets(spec, a.now()))
}

// testEvent finds the event of req: a stored one by id (of the endpoint's
// tenant only, when it has one), or the inline one.
func (a *handler) testEvent(ctx context.Context, w http.ResponseWriter, r *http.Request, req api.CodeTest, ep config.Endpoint) (testedEvent, bool) {
	switch {
	case req.EventID != "" && req.Event != nil:
		writeFieldError(w, http.StatusBadRequest, "event", "event: give event_id or event, not both")
		return testedEvent{}, false
	case req.EventID != "":
		if a.events == nil {
			writeError(w, http.StatusNotFound, fmt.Sprintf("event %q: this process reads no event log", req.EventID))
			return testedEvent{}, false
		}
		info, found, err := a.events(ctx, req.EventID)
		if err != nil {
			a.fail(w, r, err)
			return testedEvent{}, false
		}
		if !found || (ep.Tenant != "" && info.Tenant != ep.Tenant) {
			writeError(w, http.StatusNotFound, fmt.Sprintf("event %q: the event log does not hold it", req.EventID))
			return testedEvent{}, false
		}
		return testedEvent{ID: req.EventID, Type: info.Type, Tenant: info.Tenant, Key: info.Key, ContentType: info.ContentType, Headers: info.Headers, Data: info.Data}, true
	case req.Event != nil:
		e := req.Event
		if e.Type == "" {
			writeFieldError(w, http.StatusBadRequest, "event.type", "event.type: required")
			return testedEvent{}, false
		}
		if err := config.ValidateEventType(e.Type); err != nil {
			writeFieldError(w, http.StatusBadRequest, "event.type", "event.type: "+err.Error())
			return testedEvent{}, false
		}
		ev := testedEvent{ID: e.ID, Type: e.Type, Tenant: e.Tenant, Key: e.Key, ContentType: "application/json", Data: e.Data}
		if ev.ID == "" {
			ev.ID = "evt_test"
		}
		if len(e.Headers) > 0 {
			ev.Headers = make(map[string][]string, len(e.Headers))
			for k, v := range e.Headers {
				ev.Headers[k] = []string{v}
			}
		}
		return ev, true
	}
	writeFieldError(w, http.StatusBadRequest, "event_id", "event_id: give event_id or event")
	return testedEvent{}, false
}

// filterTest is POST /api/v1/endpoints/{id}/filter/test.
func (a *handler) filterTest(w http.ResponseWriter, r *http.Request) {
	req, ep, ev, ok := a.codeTest(w, r)
	if !ok {
		return
	}
	if req.Transform != nil {
		writeFieldError(w, http.StatusBadRequest, "transform", "transform: test it with /transform/test")
		return
	}
	expr := ep.Filter
	if req.Filter != nil {
		expr = *req.Filter
	}
	if expr == "" {
		writeJSON(w, http.StatusOK, api.FilterTestResult{Match: true})
		return
	}
	f, err := a.cfg().Security.CompileFilter(expr)
	if err != nil {
		writeFieldError(w, http.StatusBadRequest, "filter", err.Error())
		return
	}
	match, err := f.Match(filter.NewEvent(filter.Input{
		Type: ev.Type, ID: ev.ID, Tenant: ev.Tenant, Key: ev.Key, Headers: ev.Headers, Data: ev.Data,
	}, filter.Limits{}))
	res := api.FilterTestResult{Match: match}
	if err != nil {
		res.Error = err.Error()
	}
	writeJSON(w, http.StatusOK, res)
}

// transformTest is POST /api/v1/endpoints/{id}/transform/test.
func (a *handler) transformTest(w http.ResponseWriter, r *http.Request) {
	req, ep, ev, ok := a.codeTest(w, r)
	if !ok {
		return
	}
	if req.Filter != nil {
		writeFieldError(w, http.StatusBadRequest, "filter", "filter: test it with /filter/test")
		return
	}
	src := ep.Transform
	if req.Transform != nil {
		src = *req.Transform
	}
	out := transform.Output{URL: ep.URL, Payload: ev.Data, ContentType: ev.ContentType}
	var res api.TransformTestResult
	if src != "" {
		s, err := transform.Compile(src)
		if err != nil {
			writeFieldError(w, http.StatusBadRequest, "transform", err.Error())
			return
		}
		eng := transform.New(transform.Options{Concurrency: 1})
		defer eng.Close()
		out, err = eng.Run(r.Context(), "test/"+ep.ID, s, transform.Input{
			Type: ev.Type, ID: ev.ID, Tenant: ev.Tenant, Key: ev.Key,
			Payload: ev.Data, ContentType: ev.ContentType, URL: ep.URL,
		}, transform.Limits{
			Timeout: ep.TransformTimeout, MaxMemory: ep.TransformMaxMemory,
			MaxOutputBytes: a.cfg().Security.MaxPayloadBytes,
		})
		if err != nil {
			var te *transform.Error
			if !errors.As(err, &te) {
				a.fail(w, r, err)
				return
			}
			res.Error = err.Error()
			writeJSON(w, http.StatusOK, res)
			return
		}
	}
	if out.Cancel {
		res.Cancel = true
		writeJSON(w, http.StatusOK, res)
		return
	}
	res.Request = &api.TestRequestShape{URL: out.URL, Headers: requestHeaders(ep, ev, out), Body: string(out.Payload)}
	writeJSON(w, http.StatusOK, res)
}

// requestHeaders are the headers a delivery of out would carry, secret
// values redacted: the endpoint's configured ones (overridden by the
// script's), the content type and the signing headers.
func requestHeaders(ep config.Endpoint, ev testedEvent, out transform.Output) map[string]string {
	h := make(map[string]string, len(ep.Headers)+len(out.Headers)+4)
	for name := range ep.Headers {
		h[name] = redacted
	}
	for name, v := range out.Headers {
		for old := range h {
			if strings.EqualFold(old, name) {
				delete(h, old)
			}
		}
		h[name] = v
	}
	if _, set := h["Content-Type"]; !set && out.ContentType != "" {
		h["Content-Type"] = out.ContentType
	}
	h["webhook-id"] = ev.ID
	h["webhook-timestamp"] = redacted
	h["webhook-signature"] = redacted
	return h
}

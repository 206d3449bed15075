package console

import (
	"errors"
	"fmt"
	"net/http"
	"net/textproto"
	"net/url"
	"slices"
	"strings"
)

// The portal's changes to an endpoint: the edit form, pausing and
// resuming, and deleting it after a confirmation. Every one goes through
// the admin API with the endpoint the session owns (owned).

// errNotOffered is a form's choice this portal does not offer (a
// destination type, a transform): 403, with the message naming the field.
var errNotOffered = errors.New("not offered here")

// formError is a mistake in a form, named by its field: 400.
type formError string

func (e formError) Error() string { return string(e) }

// formStatus is the status of a portal action's error: 400 for a form's
// mistake, 403 for a choice not offered, the admin API's otherwise.
func formStatus(err error) int {
	if _, ok := errors.AsType[formError](err); ok {
		return http.StatusBadRequest
	}
	if errors.Is(err, errNotOffered) {
		return http.StatusForbidden
	}
	return statusOf(err)
}

// portalEdit saves the fields of the edit form that changed.
func (c *Console) portalEdit(r *http.Request, cur endpoint) error {
	f := r.PostForm
	patch := map[string]any{}
	for k, old := range map[string]string{"description": cur.Description, "filter": cur.Filter} {
		if v := strings.TrimSpace(f.Get(k)); f.Has(k) && v != old {
			patch[k] = v
		}
	}
	if f.Has("transform") {
		if !c.o.AllowTransforms {
			return fmt.Errorf("transform: transformations are %w", errNotOffered)
		}
		if v := strings.TrimSpace(f.Get("transform")); v != strings.TrimSpace(cur.Transform) {
			patch["transform"] = v
		}
	}
	if f.Has("events") {
		if ev := formEvents(f); !slices.Equal(ev, cur.Events) {
			patch["events"] = ev
		}
	}
	h, err := formHeaders(f)
	if err != nil {
		return err
	}
	if h != nil {
		patch["headers"] = h
	}
	dest, err := c.formDestination(f, cur.DestinationType())
	if err != nil {
		return err
	}
	switch {
	case dest != nil:
		patch["destination"] = dest
		patch["url"] = "" // a broker's address is under destination
		if dest["type"] == "webhook" {
			patch["url"] = strings.TrimSpace(f.Get("url"))
		}
	case f.Has("url") && strings.TrimSpace(f.Get("url")) != cur.URL && cur.DestinationType() == "webhook":
		patch["url"] = strings.TrimSpace(f.Get("url"))
	}
	if len(patch) == 0 {
		return nil
	}
	_, err = c.api.call(r.Context(), http.MethodPatch, "/api/v1/endpoints/"+url.PathEscape(cur.ID), patch, nil)
	return err
}

// formEvents are the event types of a form: the catalogue's boxes ticked
// (types) and the patterns typed (events), in that order, each once.
func formEvents(f url.Values) []string {
	var out []string
	for _, s := range append(slices.Clone(f["types"]), patterns(f.Get("events"))...) {
		if s = strings.TrimSpace(s); s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// formHeaders reads the headers field, one "Name: value" a line, which
// replaces the endpoint's headers; nil when the field is empty (keep
// them), an empty map when headers_clear is ticked (remove them).
func formHeaders(f url.Values) (map[string]string, error) {
	if f.Get("headers_clear") != "" {
		return map[string]string{}, nil
	}
	text := strings.TrimSpace(f.Get("headers"))
	if text == "" {
		return nil, nil
	}
	h := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, value, ok := strings.Cut(line, ":")
		name, value = strings.TrimSpace(name), strings.TrimSpace(value)
		if !ok || name == "" || value == "" {
			return nil, formError(fmt.Sprintf("headers: line %d: write it as Name: value", i+1))
		}
		h[textproto.CanonicalMIMEHeaderKey(name)] = value
	}
	return h, nil
}

// destinationFields are the form fields of each destination type besides
// webhook, with the API field each one fills.
var destinationFields = map[string][][2]string{
	"nats":     {{"dest_url_nats", "url"}, {"dest_subject", "subject"}},
	"kafka":    {{"dest_brokers", "brokers"}, {"dest_topic", "topic"}},
	"rabbitmq": {{"dest_url_rabbitmq", "url"}, {"dest_exchange", "exchange"}, {"dest_routing_key", "routing_key"}},
}

// destForm is what the destination fields of a form show: the types
// offered and the endpoint's current one.
type destForm struct {
	Types   []string
	Current string
}

// Offers reports whether the form offers destination type t.
func (d destForm) Offers(t string) bool { return slices.Contains(d.Types, t) }

// destinations are the destination types the portal offers
// (portal.destinations), webhook first.
func (c *Console) destinations() []string {
	out := []string{"webhook"}
	for _, t := range c.o.Destinations {
		if t != "webhook" {
			out = append(out, t)
		}
	}
	return out
}

// formDestination is the destination a form chose: nil when it keeps the
// current type cur with no broker field filled (or offers webhook alone),
// an error naming the field when it chose a type the portal does not
// offer.
func (c *Console) formDestination(f url.Values, cur string) (map[string]any, error) {
	typ := strings.TrimSpace(f.Get("dest_type"))
	if typ == "" {
		return nil, nil
	}
	if !slices.Contains(c.destinations(), typ) {
		return nil, fmt.Errorf("destination: delivering to %q is %w; choose %s", typ, errNotOffered, strings.Join(c.destinations(), " or "))
	}
	d := map[string]any{"type": typ}
	for _, kv := range destinationFields[typ] {
		v := strings.TrimSpace(f.Get(kv[0]))
		switch {
		case v == "":
		case kv[1] == "brokers":
			d[kv[1]] = patterns(v)
		default:
			d[kv[1]] = v
		}
	}
	if typ == cur && len(d) == 1 {
		return nil, nil
	}
	return d, nil
}

// portalDelete asks first, then deletes the endpoint and goes home.
func (c *Console) portalDelete(w http.ResponseWriter, r *http.Request, p *page, sess session, ep endpoint) {
	back := p.Base + "/endpoints/" + url.PathEscape(ep.ID)
	if r.PostForm.Get("step") != "confirm" {
		p.Title = "Delete endpoint " + ep.ID
		p.Data = confirmData{Action: back + "/delete", Fields: [][2]string{{"step", "confirm"}}, Back: back, Verb: "delete",
			What: "Nothing more will be sent to " + ep.Where() + "; deliveries waiting for it are dropped. This cannot be undone."}
		c.render(w, http.StatusOK, "portal_delete", p)
		return
	}
	if _, err := c.api.call(r.Context(), http.MethodDelete, "/api/v1/endpoints/"+url.PathEscape(ep.ID), nil, nil); err != nil {
		p.Error = "Not deleted: " + customerWords(err.Error())
		c.renderPortalEndpoint(w, r, p, sess, formStatus(err))
		return
	}
	http.Redirect(w, r, p.Base+"/?done=removed", http.StatusSeeOther)
}

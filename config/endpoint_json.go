package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/filter"
	"github.com/hookjet/hookjet/transform"
)

// Overrides are the per-endpoint settings an endpoint created through the
// admin API sets itself. A nil field inherits [Config.Defaults], so that a
// change of the defaults reaches every endpoint that does not override it.
// Its JSON form is the admin API's: {"timeout": "30s", "retry":
// {"max_attempts": 4}}, durations as Go duration strings.
type Overrides struct {
	Timeout                 *time.Duration
	MaxInFlight             *int
	MaxBacklog              *int
	RateLimitRPS            *float64
	RateLimitBurst          *int
	RetryBase               *time.Duration
	RetryCap                *time.Duration
	RetryMaxAttempts        *int
	RetryMaxAge             *time.Duration
	BreakerFailureThreshold *int
	BreakerCooldown         *time.Duration
	BreakerMaxCooldown      *time.Duration
	BreakerSlowP95          *time.Duration
	Ordering                *string
	OrderingOnDeadLetter    *string
	TransformTimeout        *time.Duration
	TransformMaxMemory      *int64
}

// override ties one field of Overrides to its JSON path and to the Settings
// field it replaces. Both accessors return pointers of the same base type:
// **T and *T.
type override struct {
	path     string
	own      func(*Overrides) any
	settings func(*Settings) any
}

// overrides lists every overridable setting, in the order of the file.
var overrides = []override{
	{"timeout", func(o *Overrides) any { return &o.Timeout }, func(s *Settings) any { return &s.Timeout }},
	{"max_in_flight", func(o *Overrides) any { return &o.MaxInFlight }, func(s *Settings) any { return &s.MaxInFlight }},
	{"max_backlog", func(o *Overrides) any { return &o.MaxBacklog }, func(s *Settings) any { return &s.MaxBacklog }},
	{"rate_limit.rps", func(o *Overrides) any { return &o.RateLimitRPS }, func(s *Settings) any { return &s.RateLimit.RPS }},
	{"rate_limit.burst", func(o *Overrides) any { return &o.RateLimitBurst }, func(s *Settings) any { return &s.RateLimit.Burst }},
	{"retry.base", func(o *Overrides) any { return &o.RetryBase }, func(s *Settings) any { return &s.Retry.Base }},
	{"retry.cap", func(o *Overrides) any { return &o.RetryCap }, func(s *Settings) any { return &s.Retry.Cap }},
	{"retry.max_attempts", func(o *Overrides) any { return &o.RetryMaxAttempts }, func(s *Settings) any { return &s.Retry.MaxAttempts }},
	{"retry.max_age", func(o *Overrides) any { return &o.RetryMaxAge }, func(s *Settings) any { return &s.Retry.MaxAge }},
	{"breaker.failure_threshold", func(o *Overrides) any { return &o.BreakerFailureThreshold }, func(s *Settings) any { return &s.Breaker.FailureThreshold }},
	{"breaker.cooldown", func(o *Overrides) any { return &o.BreakerCooldown }, func(s *Settings) any { return &s.Breaker.Cooldown }},
	{"breaker.max_cooldown", func(o *Overrides) any { return &o.BreakerMaxCooldown }, func(s *Settings) any { return &s.Breaker.MaxCooldown }},
	{"breaker.slow_p95", func(o *Overrides) any { return &o.BreakerSlowP95 }, func(s *Settings) any { return &s.Breaker.SlowP95 }},
	{"ordering", func(o *Overrides) any { return &o.Ordering }, func(s *Settings) any { return &s.Ordering }},
	{"ordering_on_dead_letter", func(o *Overrides) any { return &o.OrderingOnDeadLetter }, func(s *Settings) any { return &s.OrderingOnDeadLetter }},
	{"transform_timeout", func(o *Overrides) any { return &o.TransformTimeout }, func(s *Settings) any { return &s.TransformTimeout }},
	{"transform_max_memory", func(o *Overrides) any { return &o.TransformMaxMemory }, func(s *Settings) any { return &s.TransformMaxMemory }},
}

// overridePaths maps a JSON path to its entry in overrides.
var overridePaths = func() map[string]override {
	m := make(map[string]override, len(overrides))
	for _, o := range overrides {
		m[o.path] = o
	}
	return m
}()

// Apply returns s with every set field of o replacing its counterpart.
func (o Overrides) Apply(s Settings) Settings {
	for _, f := range overrides {
		switch own := f.own(&o).(type) {
		case **time.Duration:
			if *own != nil {
				*f.settings(&s).(*time.Duration) = **own
			}
		case **int:
			if *own != nil {
				*f.settings(&s).(*int) = **own
			}
		case **int64:
			if *own != nil {
				*f.settings(&s).(*int64) = **own
			}
		case **float64:
			if *own != nil {
				*f.settings(&s).(*float64) = **own
			}
		case **string:
			if *own != nil {
				*f.settings(&s).(*string) = **own
			}
		}
	}
	return s
}

// merge copies into o every field that given names from patch: a value, or
// nil (back to the default) for a JSON null.
func (o *Overrides) merge(patch Overrides, given map[string]bool) {
	for _, f := range overrides {
		if !given[f.path] {
			continue
		}
		switch own := f.own(o).(type) {
		case **time.Duration:
			*own = *f.own(&patch).(**time.Duration)
		case **int:
			*own = *f.own(&patch).(**int)
		case **int64:
			*own = *f.own(&patch).(**int64)
		case **float64:
			*own = *f.own(&patch).(**float64)
		case **string:
			*own = *f.own(&patch).(**string)
		}
	}
}

// MarshalJSON writes the set fields, nested as in the file:
// {"retry":{"max_attempts":4}}.
func (o Overrides) MarshalJSON() ([]byte, error) {
	out := map[string]any{}
	for _, f := range overrides {
		var v any
		switch own := f.own(&o).(type) {
		case **time.Duration:
			if *own != nil {
				v = (**own).String()
			}
		case **int:
			if *own != nil {
				v = **own
			}
		case **int64:
			if *own != nil {
				v = **own
			}
		case **float64:
			if *own != nil {
				v = **own
			}
		case **string:
			if *own != nil {
				v = **own
			}
		}
		if v == nil {
			continue
		}
		if section, name, nested := strings.Cut(f.path, "."); nested {
			m, _ := out[section].(map[string]any)
			if m == nil {
				m = map[string]any{}
				out[section] = m
			}
			m[name] = v
		} else {
			out[f.path] = v
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes, strictly.
func (o *Overrides) UnmarshalJSON(data []byte) error {
	d := patchDecoder{given: map[string]bool{}}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return err
	}
	var patch EndpointPatch
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		if !d.setting(&patch, name, obj[name]) {
			d.fail(name, errors.New("unknown field"))
		}
	}
	if len(d.errs) > 0 {
		return errors.Join(d.errs...)
	}
	*o = patch.Overrides
	return nil
}

// EndpointSpec is an endpoint as the admin API defines it: its own fields
// and only the settings it overrides. [ResolveEndpoint] makes it an
// [Endpoint].
type EndpointSpec struct {
	// ID names the endpoint, as [Endpoint.ID].
	ID string
	// URL is where deliveries go, as [Endpoint.URL].
	URL string
	// Events are the endpoint's patterns; nil means every event.
	Events []string
	// Tenant and Description are free text; empty means none.
	Tenant      string
	Description string
	// Owner is who answers for the endpoint's dead letters; free text.
	Owner string
	// Filter and Transform are the endpoint's CEL filter and JavaScript
	// transform, as [Endpoint.Filter] and [Endpoint.Transform]; empty
	// means none.
	Filter    string
	Transform string
	// Headers are extra request headers; nil means none.
	Headers map[string]Secret
	// Secrets sign every request; SecretExpiry runs parallel to it (zero or
	// missing: never expires).
	Secrets      []Secret
	SecretExpiry []time.Time
	// InsecureSkipVerify turns off TLS certificate verification.
	InsecureSkipVerify bool
	// Destination is where deliveries go, as [Endpoint.Destination].
	Destination Destination
	// Auth is how requests authenticate; the zero value is none.
	Auth Auth
	// Proxy is the endpoint's egress proxy: "" security.egress_proxy,
	// "none" none, or an http:// URL.
	Proxy string
	// Overrides are the settings the endpoint sets itself.
	Overrides Overrides
}

// EndpointPatch is an endpoint, or a change to one, as the admin API
// receives it in JSON. A field absent from the JSON leaves the endpoint's
// value alone; null restores the default (no tenant, every event, the
// default setting); a value replaces it. Build it with
// [DecodeEndpointPatch]; apply it with [EndpointPatch.Apply].
type EndpointPatch struct {
	ID                 *string
	URL                *string
	Tenant             *string
	Description        *string
	Owner              *string
	Filter             *string
	Transform          *string
	Events             []string
	Secrets            []Secret
	Headers            map[string]Secret
	InsecureSkipVerify *bool
	Destination        *Destination
	Auth               *Auth // the whole auth, replaced as one; the zero Auth (JSON null) removes it
	Proxy              *string
	Overrides          Overrides

	given map[string]bool // JSON paths present, null included
}

// Has reports whether the JSON held field ("url", "retry.max_attempts"),
// null included.
func (p EndpointPatch) Has(field string) bool { return p.given[field] }

// Apply returns spec with the patch's fields merged in, field by field.
func (p EndpointPatch) Apply(spec EndpointSpec) EndpointSpec {
	str := func(field string, dst *string, v *string) {
		if p.given[field] {
			*dst = ""
			if v != nil {
				*dst = *v
			}
		}
	}
	str("id", &spec.ID, p.ID)
	str("url", &spec.URL, p.URL)
	str("tenant", &spec.Tenant, p.Tenant)
	str("description", &spec.Description, p.Description)
	str("owner", &spec.Owner, p.Owner)
	str("filter", &spec.Filter, p.Filter)
	str("transform", &spec.Transform, p.Transform)
	str("proxy", &spec.Proxy, p.Proxy)
	if p.given["auth"] && p.Auth != nil {
		spec.Auth = *p.Auth
	}
	if p.given["events"] {
		spec.Events = slices.Clone(p.Events)
	}
	if p.given["secrets"] {
		spec.Secrets, spec.SecretExpiry = slices.Clone(p.Secrets), nil
	}
	if p.given["headers"] {
		spec.Headers = maps.Clone(p.Headers)
	}
	if p.given["insecure_skip_verify"] {
		spec.InsecureSkipVerify = p.InsecureSkipVerify != nil && *p.InsecureSkipVerify
	}
	if p.given["destination"] {
		spec.Destination = Destination{} // null: the webhook
		if p.Destination != nil {
			spec.Destination = *p.Destination
		}
	}
	spec.Overrides.merge(p.Overrides, p.given)
	return spec
}

// DecodeEndpointPatch decodes an admin API endpoint body: a JSON object with
// any of id, url, destination, events, tenant, description, owner, filter,
// transform, headers, secrets, insecure_skip_verify, auth, proxy, timeout,
// max_in_flight, max_backlog, rate_limit, retry, breaker, ordering,
// ordering_on_dead_letter, transform_timeout and transform_max_memory (the
// per-endpoint keys of the config file). Durations are Go
// duration strings ("15s"). An unknown field, a value of the wrong type or
// trailing data is an error. Errors are an errors.Join of [*FieldError]
// whose Key is the JSON field ("retry.max_attempts"); they wrap
// [ErrInvalid] and never contain a secret or header value. With errors for
// some fields the patch returned holds the fields that decoded (so that a
// caller can validate them too and report every problem at once).
func DecodeEndpointPatch(data []byte) (EndpointPatch, error) {
	var obj map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&obj); err != nil || obj == nil {
		return EndpointPatch{}, &FieldError{Key: "body", Err: bodyError(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return EndpointPatch{}, &FieldError{Key: "body", Err: errors.New("must hold one JSON object and nothing after it")}
	}
	d := patchDecoder{given: map[string]bool{}}
	p := EndpointPatch{given: d.given}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		d.field(&p, name, obj[name])
	}
	if len(d.errs) > 0 {
		return p, errors.Join(d.errs...)
	}
	return p, nil
}

// bodyError describes why a body is not a JSON object, without quoting it.
func bodyError(err error) error {
	if err == nil {
		return errors.New("must be a JSON object")
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		return fmt.Errorf("must be a JSON object, got %s", te.Value)
	}
	return fmt.Errorf("invalid JSON: %w", err)
}

// patchDecoder decodes the fields of an EndpointPatch, collecting problems.
type patchDecoder struct {
	given map[string]bool
	errs  []error
}

func (d *patchDecoder) fail(key string, err error) {
	d.errs = append(d.errs, &FieldError{Key: key, Err: err})
}

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// field decodes one top-level field of an endpoint body.
func (d *patchDecoder) field(p *EndpointPatch, name string, raw json.RawMessage) {
	d.given[name] = true
	null := isNull(raw)
	var err error
	switch name {
	case "id":
		p.ID, err = optString(raw, null)
	case "url":
		p.URL, err = optString(raw, null)
	case "tenant":
		p.Tenant, err = optString(raw, null)
	case "description":
		p.Description, err = optString(raw, null)
	case "owner":
		p.Owner, err = optString(raw, null)
	case "filter":
		p.Filter, err = optString(raw, null)
	case "transform":
		p.Transform, err = optString(raw, null)
	case "events":
		var list []json.RawMessage
		if err = strict(raw, &list, "a list of patterns"); err == nil && list != nil {
			p.Events = make([]string, len(list))
			for i, v := range list {
				if ierr := strict(v, &p.Events[i], "a string"); ierr != nil {
					d.fail(fmt.Sprintf("events[%d]", i), ierr)
				}
			}
		}
	case "secrets":
		var list []json.RawMessage
		if err = strict(raw, &list, "a list of whsec_... secrets"); err == nil && list != nil {
			p.Secrets = make([]Secret, len(list))
			for i, v := range list {
				var sv string
				if ierr := strict(v, &sv, "a string"); ierr != nil {
					d.fail(fmt.Sprintf("secrets[%d]", i), ierr)
				}
				p.Secrets[i] = NewSecret(sv)
			}
		}
	case "headers":
		var h map[string]json.RawMessage
		if err = strict(raw, &h, "an object of header names to values"); err == nil && h != nil {
			p.Headers = make(map[string]Secret, len(h))
			for _, k := range slices.Sorted(maps.Keys(h)) {
				var v string
				if ierr := strict(h[k], &v, "a string"); ierr != nil {
					d.fail("headers."+k, ierr)
				}
				p.Headers[k] = NewSecret(v)
			}
		}
	case "auth":
		p.Auth = d.decodeAuth(raw)
	case "proxy":
		p.Proxy, err = optString(raw, null)
	case "insecure_skip_verify":
		if !null {
			var b bool
			err = strict(raw, &b, "true or false")
			p.InsecureSkipVerify = &b
		}
	case "destination":
		if !null {
			var dest Destination
			dest, err = decodeDestination(raw)
			p.Destination = &dest
		}
	default:
		delete(d.given, name)
		if !d.setting(p, name, raw) {
			d.fail(name, unknownField(name))
		}
		return
	}
	if err != nil {
		d.fail(name, err)
	}
}

// topFields are the top-level fields of an endpoint body, for suggestions.
var topFields = []string{"id", "url", "destination", "events", "tenant", "description", "headers", "secrets",
	"insecure_skip_verify", "auth", "proxy", "timeout", "max_in_flight", "max_backlog", "rate_limit", "retry", "breaker",
	"ordering", "ordering_on_dead_letter", "filter", "transform", "transform_timeout", "transform_max_memory"}

// unknownField is the reason for an unknown field, with the closest known
// name when it looks like a typo.
func unknownField(path string) error {
	name := path[strings.LastIndexByte(path, '.')+1:]
	candidates := topFields
	if section, _, nested := strings.Cut(path, "."); nested {
		candidates = nil
		for _, o := range overrides {
			if s, n, ok := strings.Cut(o.path, "."); ok && s == section {
				candidates = append(candidates, n)
			}
		}
	}
	best, bestDist := "", 3
	for _, c := range candidates {
		if dist := editDistance(name, c); dist < bestDist {
			best, bestDist = c, dist
		}
	}
	if best != "" {
		return fmt.Errorf("unknown field (did you mean %q?)", best)
	}
	return errors.New("unknown field")
}

// setting decodes a settings field (timeout, max_in_flight) or section
// (rate_limit, retry, breaker), reporting false for a name that is neither.
func (d *patchDecoder) setting(p *EndpointPatch, name string, raw json.RawMessage) bool {
	if o, ok := overridePaths[name]; ok {
		d.leaf(p, o, raw)
		return true
	}
	known := false
	for _, o := range overrides {
		if strings.HasPrefix(o.path, name+".") {
			known = true
			break
		}
	}
	if !known {
		return false
	}
	if isNull(raw) { // the whole section back to the defaults
		for _, o := range overrides {
			if strings.HasPrefix(o.path, name+".") {
				d.given[o.path] = true
			}
		}
		return true
	}
	var obj map[string]json.RawMessage
	if err := strict(raw, &obj, "an object"); err != nil {
		d.fail(name, err)
		return true
	}
	for _, sub := range slices.Sorted(maps.Keys(obj)) {
		path := name + "." + sub
		if o, ok := overridePaths[path]; ok {
			d.leaf(p, o, obj[sub])
		} else {
			d.fail(path, unknownField(path))
		}
	}
	return true
}

// leaf decodes one setting: null clears the override.
func (d *patchDecoder) leaf(p *EndpointPatch, o override, raw json.RawMessage) {
	d.given[o.path] = true
	if isNull(raw) {
		return
	}
	var err error
	switch own := o.own(&p.Overrides).(type) {
	case **time.Duration:
		var s string
		if err = strict(raw, &s, `a duration string such as "15s"`); err == nil {
			var v time.Duration
			if v, err = parseDuration(s); err == nil {
				*own = &v
			}
		}
	case **int:
		var n json.Number
		if err = strict(raw, &n, "an integer"); err == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
			err = errors.New("want an integer, got string")
		}
		if err == nil {
			var v int64
			if v, err = strconv.ParseInt(n.String(), 10, 0); err != nil {
				err = errors.New("want an integer")
			} else {
				i := int(v)
				*own = &i
			}
		}
	case **int64:
		var n json.Number
		if err = strict(raw, &n, "an integer"); err == nil && bytes.HasPrefix(bytes.TrimSpace(raw), []byte(`"`)) {
			err = errors.New("want an integer, got string")
		}
		if err == nil {
			v, perr := strconv.ParseInt(n.String(), 10, 64)
			if perr != nil {
				err = errors.New("want an integer")
			} else {
				*own = &v
			}
		}
	case **float64:
		var v float64
		if err = strict(raw, &v, "a number"); err == nil {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				err = errors.New("want a finite number")
			} else {
				*own = &v
			}
		}
	case **string:
		var v string
		if err = strict(raw, &v, "a string"); err == nil {
			*own = &v
		}
	}
	if err != nil {
		d.fail(o.path, err)
	}
}

// optString decodes a string or null.
func optString(raw json.RawMessage, null bool) (*string, error) {
	if null {
		return nil, nil
	}
	var s string
	if err := strict(raw, &s, "a string"); err != nil {
		return nil, err
	}
	return &s, nil
}

// strict decodes raw into v, describing a type mismatch with want and never
// quoting the value.
func strict(raw json.RawMessage, v any, want string) error {
	if err := json.Unmarshal(raw, v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			return fmt.Errorf("want %s, got %s", want, te.Value)
		}
		return fmt.Errorf("want %s", want)
	}
	return nil
}

// ResolveEndpoint makes spec an [Endpoint] the way the config file does:
// defaults with the spec's overrides applied field by field, events
// defaulting to every event, the rate limit's burst and the event patterns
// normalised, secrets whose expiry is set kept (the caller drops expired
// ones). It then checks every field with the file's rules; errors are an
// errors.Join of [*FieldError] keyed by JSON field ("url", "events[1]",
// "retry.cap"). It does not apply security.https_only: see
// [Security.CheckURL]. Source is left empty for the caller to set.
func ResolveEndpoint(defaults Settings, spec EndpointSpec) (Endpoint, error) {
	ep := Endpoint{
		ID:                 spec.ID,
		URL:                spec.URL,
		Events:             slices.Clone(spec.Events),
		Tenant:             spec.Tenant,
		Description:        spec.Description,
		Owner:              spec.Owner,
		Filter:             spec.Filter,
		Transform:          spec.Transform,
		Headers:            maps.Clone(spec.Headers),
		Secrets:            slices.Clone(spec.Secrets),
		InsecureSkipVerify: spec.InsecureSkipVerify,
		Destination:        spec.Destination,
		Auth:               spec.Auth,
		Proxy:              spec.Proxy,
		Settings:           spec.Overrides.Apply(defaults),
	}
	if len(spec.SecretExpiry) > 0 {
		ep.SecretExpiry = make([]time.Time, len(ep.Secrets))
		copy(ep.SecretExpiry, spec.SecretExpiry)
	}
	if ep.Events == nil {
		ep.Events = []string{">"}
	}
	ep.RateLimit = ep.RateLimit.normalized()
	ep.Events = normalizeEvents(ep.Events)

	var p problems
	if err := checkID(ep.ID); err != nil {
		p.add("id", "%w", err)
	}
	if len(ep.Description) > maxTextLen {
		p.add("description", "must be at most %d bytes, got %d", maxTextLen, len(ep.Description))
	}
	if len(ep.Owner) > maxTextLen {
		p.add("owner", "must be at most %d bytes, got %d", maxTextLen, len(ep.Owner))
	}
	if len(ep.Filter) > filter.MaxExpressionBytes {
		p.add("filter", "must be at most %d bytes, got %d", filter.MaxExpressionBytes, len(ep.Filter))
	}
	if len(ep.Transform) > transform.MaxScriptBytes {
		p.add("transform", "must be at most %d bytes, got %d", transform.MaxScriptBytes, len(ep.Transform))
	}
	validateEndpointFields(&p, "", &ep, false)
	validateSettings(&p, "", ep.Settings)
	if len(p) > 0 {
		errs := make([]error, len(p))
		for i, fe := range p {
			errs[i] = fe
		}
		return Endpoint{}, errors.Join(errs...)
	}
	return ep, nil
}

// maxTextLen bounds an API endpoint's tenant and description.
const maxTextLen = 1024

// CheckURL applies security.https_only to an endpoint URL given to the
// admin API, returning a [*FieldError] for "url" or nil.
func (s Security) CheckURL(u string) error {
	if err := checkEndpointURL(u, s.HTTPSOnly); err != nil {
		return &FieldError{Key: "url", Err: err}
	}
	return nil
}

// SpecOf returns the definition of a resolved endpoint with every setting
// as an override, so that resolving it against any defaults gives ep's
// settings back. Processes use it to share the endpoints of their config
// files.
func SpecOf(ep Endpoint) EndpointSpec {
	s := ep.Settings
	return EndpointSpec{
		ID: ep.ID, URL: ep.URL, Events: ep.Events, Tenant: ep.Tenant, Description: ep.Description, Owner: ep.Owner,
		Filter: ep.Filter, Transform: ep.Transform,
		Headers: ep.Headers, Secrets: ep.Secrets, SecretExpiry: ep.SecretExpiry, InsecureSkipVerify: ep.InsecureSkipVerify,
		Destination: ep.Destination,
		Auth:        ep.Auth, Proxy: ep.Proxy,
		Overrides: Overrides{
			Timeout: &s.Timeout, MaxInFlight: &s.MaxInFlight, MaxBacklog: &s.MaxBacklog,
			RateLimitRPS: &s.RateLimit.RPS, RateLimitBurst: &s.RateLimit.Burst,
			RetryBase: &s.Retry.Base, RetryCap: &s.Retry.Cap, RetryMaxAttempts: &s.Retry.MaxAttempts, RetryMaxAge: &s.Retry.MaxAge,
			BreakerFailureThreshold: &s.Breaker.FailureThreshold, BreakerCooldown: &s.Breaker.Cooldown,
			BreakerMaxCooldown: &s.Breaker.MaxCooldown, BreakerSlowP95: &s.Breaker.SlowP95,
			Ordering: &s.Ordering, OrderingOnDeadLetter: &s.OrderingOnDeadLetter,
			TransformTimeout: &s.TransformTimeout, TransformMaxMemory: &s.TransformMaxMemory,
		},
	}
}

// SpecAgainst is [SpecOf] overriding only the settings in which ep differs
// from base: resolved against base, it is ep again. A definition shared
// with other processes is made against the built-in defaults
// (Default().Defaults), which every process resolves it against, so that
// the record carries what the file changed rather than every setting.
func SpecAgainst(ep Endpoint, base Settings) EndpointSpec {
	spec := SpecOf(ep)
	for _, f := range overrides {
		switch own := f.own(&spec.Overrides).(type) {
		case **time.Duration:
			dropEqual(own, f.settings(&base).(*time.Duration))
		case **int:
			dropEqual(own, f.settings(&base).(*int))
		case **int64:
			dropEqual(own, f.settings(&base).(*int64))
		case **float64:
			dropEqual(own, f.settings(&base).(*float64))
		case **string:
			dropEqual(own, f.settings(&base).(*string))
		}
	}
	return spec
}

// dropEqual unsets the override *own when it equals base.
func dropEqual[T comparable](own **T, base *T) {
	if *own != nil && **own == *base {
		*own = nil
	}
}

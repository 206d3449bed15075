package admin

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
	"github.com/hookjet/hookjet/endpoints"
)

// Deliveries is what endpoint management needs from the delivery engine.
type Deliveries interface {
	// SendTest sends a signed test event to the endpoint only, through
	// the normal delivery path, and returns its event id: of typ with
	// payload data, or a hookjet.test event when typ is empty.
	SendTest(ctx context.Context, endpointID, typ string, data []byte) (eventID string, err error)
	// Redeliver sends every stored event in [since, until) that the
	// endpoint's patterns match to that endpoint again, with its original id
	// (until zero: up to now). With dryRun it only counts them.
	Redeliver(ctx context.Context, endpointID string, since, until time.Time, dryRun bool) (matched, queued int, err error)
	// Discard drops the deliveries waiting for a deleted endpoint and
	// returns how many there were. Its dead letters stay.
	Discard(ctx context.Context, endpointID string) (discarded int, err error)
	// ConfigEndpoint returns the config-file endpoint (source "config")
	// with this id, which the API may not change.
	ConfigEndpoint(id string) (config.Endpoint, bool)
	// Applied puts an endpoint the API just stored in force in this
	// process, unless a newer revision already is; Removed stops one it
	// just deleted (rev: its last revision). The API calls them before it
	// answers, so that a change is in effect when the call returns; the
	// other processes learn of it from their watch of the bucket.
	Applied(ctx context.Context, rec endpoints.Record) error
	Removed(id string, rev uint64)
}

// EndpointStore keeps the endpoints created through the API, shared by
// every process (jetstream.EndpointStore): Record seals a definition, Spec
// opens one, Update retries fn on a concurrent change and answers
// [api.ErrConflict] when it keeps losing, Get and Update answer
// [api.ErrUnknownEndpoint] for an id it does not hold, Create
// [api.ErrEndpointExists] for one it does. Count is cheap and may count
// too many unless exact.
type EndpointStore interface {
	Record(spec config.EndpointSpec) endpoints.Record
	Spec(rec endpoints.Record) (config.EndpointSpec, error)
	Create(ctx context.Context, rec endpoints.Record) error
	Get(ctx context.Context, id string) (endpoints.Record, error)
	Update(ctx context.Context, id string, fn func(*endpoints.Record) error) (endpoints.Record, error)
	Delete(ctx context.Context, id string) error
	Count(ctx context.Context, exact bool) (int, error)
}

// Option configures the admin API.
type Option func(*handler)

// WithEndpointStore turns on endpoint management (create, update, delete,
// rotate, test, redeliver): s stores the API endpoints, d reaches the
// delivery engine, and cfg returns the configuration in force (defaults,
// security settings), which a reload may change. Without it those routes
// answer 501.
func WithEndpointStore(s EndpointStore, d Deliveries, cfg func() *config.Config) Option {
	return func(a *handler) { a.store, a.deliveries, a.cfg = s, d, cfg }
}

// Unreachable reports why no delivery could ever reach endpointURL from
// an endpoint with a tenant (tenant true) or without one, or nil when one
// might: the SSRF guard in force for such an endpoint refuses its host, a
// literal address or localhost. Names are not judged (DNS may change;
// every dial is checked).
type Unreachable func(endpointURL string, tenant bool) error

// WithUnreachable refuses, at create and update, an endpoint whose URL
// check says no delivery could reach (400 naming url).
func WithUnreachable(check Unreachable) Option { return func(a *handler) { a.unreachable = check } }

// WithConfigPath names the config file in the 409 answers for endpoints it
// owns.
func WithConfigPath(path string) Option { return func(a *handler) { a.configPath = path } }

// WithClock sets the clock for timestamps, secret expiry and "ago"
// durations; the default is time.Now.
func WithClock(now func() time.Time) Option { return func(a *handler) { a.now = now } }

// Limits of endpoint management.
const (
	maxBody      = 64 << 10
	defaultGrace = 24 * time.Hour
	maxGrace     = 7 * 24 * time.Hour
	defaultPage  = 100
	maxPage      = 1000
	maxSecrets   = 10 // signing secrets an endpoint keeps through repeated rotations
	// DiscardedHeader counts the deliveries a DELETE discarded.
	DiscardedHeader = "Hookjet-Discarded"
)

// routeEndpoints registers the endpoint management routes on mux.
func (a *handler) routeEndpoints(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/endpoints", a.listEndpoints)
	mux.HandleFunc("POST /api/v1/endpoints", a.managed(a.createEndpoint))
	mux.HandleFunc("PATCH /api/v1/endpoints/{id}", a.managed(a.patchEndpoint))
	mux.HandleFunc("DELETE /api/v1/endpoints/{id}", a.managed(a.deleteEndpoint))
	mux.HandleFunc("POST /api/v1/endpoints/{id}/secret/rotate", a.managed(a.rotateSecret))
	mux.HandleFunc("POST /api/v1/endpoints/{id}/test", a.managed(a.testEndpoint))
	mux.HandleFunc("POST /api/v1/endpoints/{id}/redeliver", a.managed(a.redeliver))
}

// managed answers 501 when endpoint management is not configured.
func (a *handler) managed(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a.store == nil {
			writeError(w, http.StatusNotImplemented, "endpoint management is not enabled in this process")
			return
		}
		h(w, r)
	}
}

func writeFieldError(w http.ResponseWriter, status int, field, msg string) {
	writeJSON(w, status, api.Answer(api.Problem{Field: field, Error: msg}))
}

// writeFieldErrors answers 400 with every problem of fes.
func writeFieldErrors(w http.ResponseWriter, fes []*config.FieldError) {
	ps := make([]api.Problem, len(fes))
	for i, fe := range fes {
		ps[i] = api.Problem{Field: fe.Key, Error: fe.Error()}
	}
	writeJSON(w, http.StatusBadRequest, api.Answer(ps...))
}

// fieldErrors returns every [*config.FieldError] in err's tree, in order.
func fieldErrors(err error) []*config.FieldError {
	if fe, ok := err.(*config.FieldError); ok { //nolint:errorlint // the tree is walked here
		return []*config.FieldError{fe}
	}
	var out []*config.FieldError
	switch u := err.(type) { //nolint:errorlint // the tree is walked here
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = append(out, fieldErrors(e)...)
		}
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			out = fieldErrors(e)
		}
	}
	return out
}

// partial reports whether a body decoded with at most field problems (err
// nil or only field errors other than "body"), so that the fields that did
// decode can be validated too and every problem reported at once.
func partial(err error) bool {
	if err == nil {
		return true
	}
	fes := fieldErrors(err)
	for _, fe := range fes {
		if fe.Key == "body" {
			return false
		}
	}
	return len(fes) > 0
}

// joinProblems joins the decoding problems of a body with the validation
// problems of what decoded, leaving out validation problems of fields that
// did not decode (their defaults stood in for them).
func joinProblems(decoding, validation error) error {
	if decoding == nil || validation == nil {
		return errors.Join(decoding, validation)
	}
	bad := fieldErrors(decoding)
	errs := []error{decoding}
	for _, fe := range fieldErrors(validation) {
		if !slices.ContainsFunc(bad, func(b *config.FieldError) bool {
			return fe.Key == b.Key || strings.HasPrefix(fe.Key, b.Key+".") || strings.HasPrefix(fe.Key, b.Key+"[")
		}) {
			errs = append(errs, fe)
		}
	}
	return errors.Join(errs...)
}

// failEndpoint answers an error of endpoint management.
func (a *handler) failEndpoint(w http.ResponseWriter, r *http.Request, err error) {
	switch fes := fieldErrors(err); {
	case len(fes) > 0:
		writeFieldErrors(w, fes)
	case errors.Is(err, api.ErrEndpointExists):
		writeFieldError(w, http.StatusConflict, "id", err.Error())
	case errors.Is(err, api.ErrConflict):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, errors.ErrUnsupported):
		writeError(w, http.StatusNotImplemented, err.Error())
	default:
		a.fail(w, r, err)
	}
}

// readBody reads a request body of at most maxBody bytes, answering 413
// for a longer one. An empty body reads as nil.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	return readBodyN(w, r, maxBody)
}

// readBodyN reads a request body of at most n bytes, answering 413 for a
// longer one.
func readBodyN(w http.ResponseWriter, r *http.Request, n int64) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, n))
	if err != nil {
		if _, tooLarge := errors.AsType[*http.MaxBytesError](err); tooLarge {
			writeFieldError(w, http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("body: larger than %d bytes", n))
		} else {
			writeFieldError(w, http.StatusBadRequest, "body", "body: "+err.Error())
		}
		return nil, false
	}
	return b, true
}

// decodeStrict decodes a small JSON body into v, refusing unknown fields;
// an empty body leaves v alone. It answers 400 naming the field itself.
func decodeStrict(w http.ResponseWriter, body []byte, v any) bool {
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	return decodeRequired(w, body, v, "")
}

// decodeRequired decodes a JSON object body into v, refusing unknown
// fields, trailing data and an empty body (empty says what to send
// instead). It answers 400 naming the field at fault itself, in JSON's
// words (never a Go type).
func decodeRequired(w http.ResponseWriter, body []byte, v any, empty string) bool {
	if empty == "" {
		empty = "a JSON object is required"
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); !errors.Is(terr, io.EOF) {
			writeFieldError(w, http.StatusBadRequest, "body", "body: must hold one JSON object and nothing after it")
			return false
		}
		if bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
			writeFieldError(w, http.StatusBadRequest, "body", "body: "+empty)
			return false
		}
		return true
	}
	p := api.DecodeProblem(err, empty)
	writeFieldError(w, http.StatusBadRequest, p.Field, p.Error)
	return false
}

// refuseConfigEndpoint answers 409 when id is a config-file endpoint.
func (a *handler) refuseConfigEndpoint(w http.ResponseWriter, id, action string) bool {
	if _, ok := a.deliveries.ConfigEndpoint(id); !ok {
		return false
	}
	file := a.configPath
	if file == "" {
		file = "the config file"
	}
	writeFieldError(w, http.StatusConflict, "id", fmt.Sprintf("endpoint %q comes from %s (source config): %s it by editing that file and reloading (SIGHUP)", id, file, action))
	return true
}

// newSecret returns a random signing secret: whsec_ + base64(32 bytes).
func newSecret() config.Secret {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return config.NewSecret("whsec_" + base64.StdEncoding.EncodeToString(b))
}

// newID returns a random endpoint id: ep_ and 20 characters of [a-z2-7].
func newID() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "ep_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// endpointObject is an endpoint as the API shows it: the status fields and
// where the endpoint comes from. Never a secret, except Secret in the
// answers to create and rotate.
type endpointObject struct {
	api.EndpointStatus
	Source      string     `json:"source"`
	Tenant      string     `json:"tenant"`
	Description string     `json:"description"`
	CreatedAt   *time.Time `json:"created_at"`
	UpdatedAt   *time.Time `json:"updated_at"`
	Secret      string     `json:"secret,omitempty"`
}

// objectOf builds the answer for an API endpoint from its resolved
// definition, over the engine's status when it already runs it.
func (a *handler) objectOf(ctx context.Context, ep config.Endpoint) endpointObject {
	st, err := a.b.Endpoint(ctx, ep.ID)
	if err != nil {
		// Not running yet (just created): a new breaker, closed, with
		// the endpoint's first cooldown.
		st = api.EndpointStatus{Breaker: api.BreakerStatus{State: "closed", CooldownSeconds: ep.Breaker.Cooldown.Seconds()}}
	}
	st.ID, st.URL, st.Events, st.Secrets = ep.ID, ep.URL, ep.Events, len(ep.Secrets)
	st.HeaderNames = slices.Sorted(maps.Keys(ep.Headers))
	st.Owner, st.Settings = ep.Owner, endpoints.SettingsOf(ep, time.Now()) // admin/settings.go
	st.Filter, st.Transform = ep.Filter, ep.Transform
	created, updated := ep.CreatedAt.UTC(), ep.UpdatedAt.UTC()
	return endpointObject{
		EndpointStatus: st,
		Source:         config.SourceAPI,
		Tenant:         ep.Tenant,
		Description:    ep.Description,
		CreatedAt:      &created,
		UpdatedAt:      &updated,
	}
}

// resolve checks spec as the config file would, plus security.https_only
// and the SSRF guard in force for it (WithUnreachable), and reports every
// problem at once.
func (a *handler) resolve(spec config.EndpointSpec) (config.Endpoint, error) {
	cfg := a.cfg()
	ep, err := config.ResolveEndpoint(cfg.Defaults, spec)
	if err == nil {
		err = cfg.Portal.CheckTenantDestination("", &ep)
	}
	badURL := false
	for _, fe := range fieldErrors(err) {
		badURL = badURL || fe.Key == "url"
	}
	if err == nil {
		for _, fe := range cfg.Security.CheckCode(ep) {
			err = errors.Join(err, fe)
		}
	}
	if !badURL && spec.Destination.IsWebhook() { // a broker's addresses are judged at each dial
		if uerr := cfg.Security.CheckURL(spec.URL); uerr != nil {
			err = errors.Join(err, uerr)
		} else if a.unreachable != nil {
			if uerr := a.unreachable(spec.URL, spec.Tenant != ""); uerr != nil {
				err = errors.Join(err, &config.FieldError{Key: "url", Err: fmt.Errorf("no delivery could ever reach it: %w", uerr)})
			}
		}
	}
	if err != nil {
		return config.Endpoint{}, err
	}
	return ep, nil
}

func (a *handler) createEndpoint(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	patch, derr := config.DecodeEndpointPatch(body)
	if !partial(derr) {
		a.failEndpoint(w, r, derr)
		return
	}
	spec := patch.Apply(config.EndpointSpec{})
	if patch.ID == nil {
		spec.ID = newID()
	}
	var secret string
	if !patch.Has("secrets") {
		s := newSecret()
		spec.Secrets, secret = []config.Secret{s}, s.Reveal()
	}
	ep, err := a.resolve(spec)
	if err = joinProblems(derr, err); err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	if a.refuseConfigEndpoint(w, spec.ID, "change") {
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	if err := a.checkRoom(ctx); err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	rec := a.store.Record(spec)
	rec.CreatedAt = a.now().UTC()
	rec.UpdatedAt = rec.CreatedAt
	if err := a.store.Create(ctx, rec); err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	if !a.apply(ctx, w, r, ep.ID, nil) {
		return
	}
	ep.CreatedAt, ep.UpdatedAt = rec.CreatedAt, rec.UpdatedAt
	obj := a.objectOf(ctx, ep)
	obj.Secret = secret
	w.Header().Set("Location", "/api/v1/endpoints/"+ep.ID)
	writeJSON(w, http.StatusCreated, obj)
}

// checkRoom refuses a new endpoint beyond security.max_endpoints. The cheap
// count is an upper bound; the exact one is taken only near the limit.
func (a *handler) checkRoom(ctx context.Context) error {
	limit := a.cfg().Security.MaxEndpoints
	n, err := a.store.Count(ctx, false)
	if err == nil && n >= limit {
		n, err = a.store.Count(ctx, true)
	}
	if err != nil {
		return err
	}
	if n >= limit {
		return fmt.Errorf("%w: security.max_endpoints (%d) reached", api.ErrConflict, limit)
	}
	return nil
}

func (a *handler) patchEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if a.refuseConfigEndpoint(w, id, "change") {
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	patch, derr := config.DecodeEndpointPatch(body)
	if !partial(derr) {
		a.failEndpoint(w, r, derr)
		return
	}
	if patch.Has("id") && (patch.ID == nil || *patch.ID != id) {
		writeFieldError(w, http.StatusBadRequest, "id", "id: cannot be changed; create a new endpoint instead")
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	var ep config.Endpoint
	stored, err := a.store.Update(ctx, id, func(rec *endpoints.Record) error {
		spec, err := a.store.Spec(*rec)
		if err != nil {
			return err
		}
		spec = endpoints.DropExpiredSecrets(patch.Apply(spec), a.now())
		ep, err = a.resolve(spec)
		if err = joinProblems(derr, err); err != nil {
			return err
		}
		created := rec.CreatedAt
		*rec = a.store.Record(spec)
		rec.CreatedAt, rec.UpdatedAt = created, a.now().UTC()
		ep.CreatedAt, ep.UpdatedAt = rec.CreatedAt, rec.UpdatedAt
		return nil
	})
	if err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	if !a.apply(ctx, w, r, id, &stored) {
		return
	}
	writeJSON(w, http.StatusOK, a.objectOf(ctx, ep))
}

// apply puts the endpoint id just stored (rec, or what the bucket holds
// when nil) in force in this process before the answer, answering an error
// itself when it cannot.
func (a *handler) apply(ctx context.Context, w http.ResponseWriter, r *http.Request, id string, rec *endpoints.Record) bool {
	if rec == nil {
		got, err := a.store.Get(ctx, id)
		if err != nil {
			a.fail(w, r, fmt.Errorf("endpoint %s stored, but reading it back failed: %w", id, err))
			return false
		}
		rec = &got
	}
	if err := a.deliveries.Applied(ctx, *rec); err != nil {
		a.fail(w, r, fmt.Errorf("endpoint %s stored, but not applied in this process (the others apply it from the bucket): %w", id, err))
		return false
	}
	return true
}

func (a *handler) deleteEndpoint(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if a.refuseConfigEndpoint(w, id, "remove") {
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	last, err := a.store.Get(ctx, id)
	if err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	if err := a.store.Delete(ctx, id); err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	a.deliveries.Removed(id, last.Revision)
	n, err := a.deliveries.Discard(ctx, id)
	if err != nil {
		a.fail(w, r, fmt.Errorf("endpoint %s deleted, but discarding its waiting deliveries failed: %w", id, err))
		return
	}
	w.Header().Set(DiscardedHeader, strconv.Itoa(n))
	w.WriteHeader(http.StatusNoContent)
}

func (a *handler) rotateSecret(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if a.refuseConfigEndpoint(w, id, "rotate its secrets") {
		return
	}
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	req := struct {
		Grace *string `json:"grace"`
	}{}
	if !decodeStrict(w, body, &req) {
		return
	}
	grace := defaultGrace
	if req.Grace != nil {
		d, err := time.ParseDuration(*req.Grace)
		if err != nil || d < 0 || d > maxGrace {
			writeFieldError(w, http.StatusBadRequest, "grace", fmt.Sprintf("grace: want a Go duration from 0s to %s (7 days), such as 24h", maxGrace))
			return
		}
		grace = d
	}
	secret := newSecret()
	ctx, cancel := timeout(r)
	defer cancel()
	stored, err := a.store.Update(ctx, id, func(rec *endpoints.Record) error {
		spec, err := a.store.Spec(*rec)
		if err != nil {
			return err
		}
		spec = rotate(endpoints.DropExpiredSecrets(spec, a.now()), secret, a.now().Add(grace))
		created := rec.CreatedAt
		*rec = a.store.Record(spec)
		rec.CreatedAt, rec.UpdatedAt = created, a.now().UTC()
		return nil
	})
	if err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	if !a.apply(ctx, w, r, id, &stored) {
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"secret": secret.Reveal()})
}

// rotate puts secret first and makes every other secret expire at until at
// the latest; it keeps at most maxSecrets.
func rotate(spec config.EndpointSpec, secret config.Secret, until time.Time) config.EndpointSpec {
	secrets := []config.Secret{secret}
	expiry := []time.Time{{}}
	for i, s := range spec.Secrets {
		exp := until.UTC()
		if i < len(spec.SecretExpiry) && !spec.SecretExpiry[i].IsZero() && spec.SecretExpiry[i].Before(exp) {
			exp = spec.SecretExpiry[i]
		}
		secrets, expiry = append(secrets, s), append(expiry, exp)
	}
	n := min(len(secrets), maxSecrets)
	spec.Secrets, spec.SecretExpiry = secrets[:n], expiry[:n]
	return spec
}

// known answers 404 unless id is an API or a config endpoint.
func (a *handler) known(ctx context.Context, w http.ResponseWriter, r *http.Request, id string) bool {
	if _, ok := a.deliveries.ConfigEndpoint(id); ok {
		return true
	}
	if _, err := a.store.Get(ctx, id); err != nil {
		a.failEndpoint(w, r, err)
		return false
	}
	return true
}

func (a *handler) testEndpoint(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	var req api.TestRequest
	if !ok || !decodeStrict(w, body, &req) {
		return
	}
	switch {
	case req.Type == "" && len(req.Data) > 0:
		writeFieldError(w, http.StatusBadRequest, "type", "type: required with data")
		return
	case req.Type != "":
		if err := config.ValidateEventType(req.Type); err != nil {
			writeFieldError(w, http.StatusBadRequest, "type", "type: "+err.Error())
			return
		}
	}
	id := r.PathValue("id")
	ctx, cancel := timeout(r)
	defer cancel()
	if !a.known(ctx, w, r, id) {
		return
	}
	eventID, err := a.deliveries.SendTest(ctx, id, req.Type, req.Data)
	if err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"event_id": eventID})
}

func (a *handler) redeliver(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var req struct {
		Since  string `json:"since"`
		Until  string `json:"until"`
		DryRun bool   `json:"dry_run"`
	}
	if !decodeStrict(w, body, &req) {
		return
	}
	now := a.now()
	if req.Since == "" {
		writeFieldError(w, http.StatusBadRequest, "since", "since: is required (RFC 3339 time or a duration ago, such as 24h)")
		return
	}
	since, err := api.ParseTime(req.Since, now)
	if err != nil {
		writeFieldError(w, http.StatusBadRequest, "since", "since: "+err.Error())
		return
	}
	until, err := api.ParseTime(req.Until, now)
	if err != nil || (!until.IsZero() && !until.After(since)) {
		writeFieldError(w, http.StatusBadRequest, "until", "until: must be an RFC 3339 time or a duration ago, after since")
		return
	}
	id := r.PathValue("id")
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	if !a.known(ctx, w, r, id) {
		return
	}
	matched, queued, err := a.deliveries.Redeliver(ctx, id, since, until, req.DryRun)
	if err != nil {
		a.failEndpoint(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]int{"matched": matched, "queued": queued})
}

func (a *handler) listEndpoints(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := defaultPage
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			writeFieldError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit: must be a number from 1 to %d", maxPage))
			return
		}
		limit = n
	}
	ctx, cancel := timeout(r)
	defer cancel()
	page := a.b.EndpointPage
	if q.Get("attention") == "true" { // admin/attention.go
		page = a.attentionPage
	}
	eps, next, err := page(ctx, q.Get("tenant"), q.Get("after"), limit)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if eps == nil {
		eps = []api.EndpointStatus{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoints": eps, "next": next})
}

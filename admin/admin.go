package admin

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/config"
)

// Backend is what the admin API reads and controls.
type Backend interface {
	Ready(ctx context.Context) error
	Summary(ctx context.Context) (api.Summary, error)
	Endpoints(ctx context.Context) ([]api.EndpointStatus, error)
	// EndpointPage returns up to limit endpoints whose ids sort after
	// after, of tenant when not empty, ordered by id, and the cursor of
	// the next page (empty after the last).
	EndpointPage(ctx context.Context, tenant, after string, limit int) ([]api.EndpointStatus, string, error)
	Endpoint(ctx context.Context, id string) (api.EndpointStatus, error)
	SetDisabled(ctx context.Context, id string, disabled bool, reason string) error
	// ResetBreaker closes endpoint id's breaker (and lifts a Retry-After
	// hold) in this process before it returns and in every process soon
	// after; its waiting deliveries go at once.
	ResetBreaker(ctx context.Context, id string) error
	// Waiting lists why deliveries wait, per endpoint that cannot take
	// them now (at most api.MaxWaiting endpoints), and how many endpoints
	// those are.
	Waiting(ctx context.Context) ([]api.Wait, int, error)
	DeadLetters(ctx context.Context, f api.DLQFilter) ([]api.DLQEntry, error)
	DeadLetterStats(ctx context.Context) ([]api.DLQStat, error)
	Replay(ctx context.Context, r api.ReplayRequest) (api.ReplayResult, error)
}

// NewHandler returns the admin API. When token is not empty every route but
// /healthz and /readyz requires "Authorization: Bearer <token>". Endpoint
// management needs [WithEndpointStore].
func NewHandler(b Backend, g prometheus.Gatherer, token string, log *slog.Logger, opts ...Option) http.Handler {
	a := &handler{b: b, log: log, now: time.Now}
	for _, o := range opts {
		o(a)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", a.ready)
	protected := http.NewServeMux()
	protected.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorLog: nil}))
	protected.HandleFunc("GET /api/v1/openapi.json", openAPI)
	protected.HandleFunc("GET /api/v1/summary", a.summary)
	a.routeEndpoints(protected)
	a.routeCodeTests(protected)  // filter and transform tests: admin/codetest.go
	a.routeEventTypes(protected) // the catalogue: admin/eventtypes.go
	protected.HandleFunc("GET /api/v1/endpoints/{id}", a.endpoint)
	protected.HandleFunc("POST /api/v1/endpoints/{id}/enable", a.setDisabled(false))
	protected.HandleFunc("POST /api/v1/endpoints/{id}/disable", a.setDisabled(true))
	protected.HandleFunc("POST /api/v1/endpoints/{id}/breaker/reset", a.resetBreaker) // waiting.go
	protected.HandleFunc("GET /api/v1/dlq", a.dlqList)
	protected.HandleFunc("GET /api/v1/dlq/stats", a.dlqStats)
	protected.HandleFunc("POST /api/v1/dlq/replay", a.dlqReplay)
	protected.HandleFunc("POST /api/v1/dlq/discard", a.dlqDiscard) // admin/discard.go
	a.routeLog(protected)                                          // the delivery log: admin/log.go
	if a.publish != nil {
		// The publish route checks its own tokens (publish.token or
		// admin.token); the protected copy only tells the catch-all
		// route which methods the path takes.
		mux.Handle(publishRoute, a.publish)
		protected.Handle(publishRoute, a.publish)
	}
	protected.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if allow := allowed(protected, r); len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeError(w, http.StatusMethodNotAllowed, r.Method+" "+r.URL.Path+": want "+strings.Join(allow, " or "))
			return
		}
		writeError(w, http.StatusNotFound, "no route "+r.Method+" "+r.URL.Path)
	})
	mux.Handle("/", requireToken(token, protected))
	return mux
}

// openAPI serves the OpenAPI document of the API (api/openapi.json).
func openAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(api.OpenAPI())
}

// allowed lists the methods mux has a route for at r's path: the catch-all
// route answers 405 with them instead of 404.
func allowed(mux *http.ServeMux, r *http.Request) []string {
	var out []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete} {
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pattern := mux.Handler(probe); pattern != "/" && pattern != "" {
			out = append(out, m)
		}
	}
	return out
}

type handler struct {
	b   Backend
	log *slog.Logger
	now func() time.Time

	// Endpoint management; store is nil when it is off.
	store      EndpointStore
	deliveries Deliveries
	cfg        func() *config.Config
	configPath string
	// unreachable refuses endpoint URLs no delivery can reach; nil: none.
	unreachable Unreachable

	// The delivery log (admin/log.go); dlog is nil when it is off.
	dlog   DeliveryLog
	events EventLookup
	// The event list and the event view's outcomes (admin/events.go);
	// elist is nil when this process keeps no event index.
	elist     EventList
	targets   EventTargets
	userAgent string
	// discard deletes dead letters (admin/discard.go); nil: off.
	discard DiscardFunc
	// durability is reported by /readyz; nil: not reported.
	durability *api.Durability
	// publish serves POST /api/v1/events (package publish); nil: off.
	publish http.Handler
	// eventTypes is the catalogue (/api/v1/event-types); nil: not served.
	eventTypes EventTypes
}

// publishRoute is the route of the HTTP publish API.
const publishRoute = "POST /api/v1/events"

// WithPublish serves POST /api/v1/events with h, which authorises requests
// itself (publish.token or admin.token).
func WithPublish(h http.Handler) Option {
	return func(a *handler) { a.publish = h }
}

// WithDurability makes /readyz report d (the servers' sync policy, the
// streams' replicas, and the streams at risk of losing acknowledged
// messages to a power cut) under "durability".
func WithDurability(d api.Durability) Option {
	return func(a *handler) { a.durability = &d }
}

func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !Authorized(token, r) {
			Unauthorized(w)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Authorized reports whether r carries "Authorization: Bearer <token>";
// every request is authorized when token is empty.
func Authorized(token string, r *http.Request) bool {
	if token == "" {
		return true
	}
	got := []byte(r.Header.Get("Authorization"))
	return subtle.ConstantTimeCompare(got, []byte("Bearer "+token)) == 1
}

// Unauthorized answers 401 as every protected route does without the token.
func Unauthorized(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="hookjet"`)
	writeError(w, http.StatusUnauthorized, "missing or wrong bearer token")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, map[string]string{"error": msg})
}

func (a *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, api.ErrUnknownEndpoint):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, api.ErrBadRequest):
		writeFieldError(w, http.StatusBadRequest, "body", err.Error())
	case errors.Is(err, context.DeadlineExceeded):
		writeError(w, http.StatusGatewayTimeout, "timed out")
	default:
		a.log.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, err.Error())
	}
}

func timeout(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), 30*time.Second)
}

func (a *handler) ready(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
	defer cancel()
	if err := a.b.Ready(ctx); err != nil {
		writeError(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, readyAnswer{Status: "ready", Durability: a.durability})
}

// readyAnswer is the body of a 200 from /readyz.
type readyAnswer struct {
	Status     string          `json:"status"`
	Durability *api.Durability `json:"durability,omitempty"`
}

func (a *handler) summary(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := timeout(r)
	defer cancel()
	s, err := a.b.Summary(ctx)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if s.Waiting, s.WaitingEndpoints, err = a.b.Waiting(ctx); err != nil {
		s.Errors = append(s.Errors, "waiting: "+err.Error())
	}
	writeJSON(w, http.StatusOK, s)
}

func (a *handler) endpoint(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := timeout(r)
	defer cancel()
	ep, err := a.b.Endpoint(ctx, r.PathValue("id"))
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, ep)
}

func (a *handler) setDisabled(disabled bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := timeout(r)
		defer cancel()
		id := r.PathValue("id")
		if err := a.b.SetDisabled(ctx, id, disabled, "disabled by an operator"); err != nil {
			a.fail(w, r, err)
			return
		}
		ep, err := a.b.Endpoint(ctx, id)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		ep.Disabled = disabled // the watch may not have delivered the change yet
		writeJSON(w, http.StatusOK, ep)
	}
}

func (a *handler) dlqList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	now := time.Now()
	f := api.DLQFilter{Endpoint: q.Get("endpoint"), Limit: 100}
	var err error
	if f.Since, err = api.ParseTime(q.Get("since"), now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "since", "since: "+err.Error())
		return
	}
	if f.Until, err = api.ParseTime(q.Get("until"), now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "until", "until: "+err.Error())
		return
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			writeFieldError(w, http.StatusBadRequest, "limit", "limit: must be a number from 1 to 10000")
			return
		}
		f.Limit = n
	}
	if v := q.Get("ids"); v != "" {
		f.IDs = strings.Split(v, ",")
	}
	if f.Deleted, err = deletedParam(q.Get("deleted")); err != nil {
		writeFieldError(w, http.StatusBadRequest, "deleted", err.Error())
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	entries, err := a.b.DeadLetters(ctx, f)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.addResponses(ctx, entries) // the delivery log's response excerpts: admin/log.go
	writeJSON(w, http.StatusOK, map[string]any{"entries": entries})
}

// deletedParam reads ?deleted=: true lists the dead letters of deleted
// endpoints (an earlier endpoint with the id, or none in force) instead of
// those of the endpoints in force.
func deletedParam(v string) (bool, error) {
	switch v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, errors.New("deleted: must be true or false")
}

func (a *handler) dlqStats(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := timeout(r)
	defer cancel()
	stats, err := a.b.DeadLetterStats(ctx)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"endpoints": stats})
}

func (a *handler) dlqReplay(w http.ResponseWriter, r *http.Request) {
	var req api.ReplayRequest
	body, ok := readBodyN(w, r, 1<<20)
	// Replaying every dead letter is never a default: ask for {}.
	if !ok || !decodeRequired(w, body, &req, `a JSON object is required; {} replays every dead letter, {"endpoint": "ID"} those of one endpoint`) {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Minute)
	defer cancel()
	res, err := a.b.Replay(ctx, req)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	a.replayWaits(ctx, req, &res) // waiting.go
	writeJSON(w, http.StatusOK, res)
}

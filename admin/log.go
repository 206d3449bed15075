package admin

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hookjet/hookjet/api"
	"github.com/hookjet/hookjet/attempt"
)

// DeliveryLog reads the delivery log (jetstream.LogReader).
type DeliveryLog interface {
	EventRecords(ctx context.Context, id string) ([]attempt.Record, error)
	Page(ctx context.Context, q api.LogQuery) ([]attempt.Record, uint64, error)
	Export(ctx context.Context, q api.LogQuery, fn func(*attempt.Record) error) error
}

// EventInfo is what the event log holds about one event.
type EventInfo struct {
	// Seq is its sequence in HOOKJET_EVENTS.
	Seq         uint64
	Type        string
	PublishedAt time.Time
	Size        int
	// Tenant, Key and ContentType are the event's tenant, ordering key and
	// Content-Type ("" when absent); Headers its message headers and Data
	// its payload (the filter and transform tests read them).
	Tenant, Key, ContentType string
	Headers                  map[string][]string
	Data                     []byte
}

// EventLookup finds an event in the event log by id; found is false when
// the log does not hold it (any more).
type EventLookup func(ctx context.Context, id string) (info EventInfo, found bool, err error)

// WithDeliveryLog serves the delivery log's routes from l, with events
// looked up in the event log by events (nil: none are).
func WithDeliveryLog(l DeliveryLog, events EventLookup) Option {
	return func(a *handler) { a.dlog, a.events = l, events }
}

// routeLog adds the delivery log's routes.
func (a *handler) routeLog(mux *http.ServeMux) {
	mux.HandleFunc("GET /api/v1/events", a.eventList) // admin/events.go
	mux.HandleFunc("GET /api/v1/events/{id}", a.event)
	mux.HandleFunc("GET /api/v1/endpoints/{id}/attempts", a.endpointAttempts)
	mux.HandleFunc("GET /api/v1/attempts", a.attempts)
	mux.HandleFunc("GET /api/v1/export/attempts", a.exportAttempts)
	mux.HandleFunc("GET /api/v1/export/dlq", a.exportDLQ)
}

func (a *handler) logOff(w http.ResponseWriter) bool {
	if a.dlog == nil {
		writeError(w, http.StatusNotFound, "the delivery log is off (log.enabled: false)")
		return true
	}
	return false
}

// event is GET /api/v1/events/{id}[?tenant=]: the event, its payload
// (console.show_payloads), and what became of it at every endpoint it
// matches (admin/events.go). With tenant, only an event of that tenant is
// shown (404 otherwise), with the deliveries of that tenant's endpoints.
func (a *handler) event(w http.ResponseWriter, r *http.Request) {
	id, tenant := r.PathValue("id"), r.URL.Query().Get("tenant")
	ctx, cancel := timeout(r)
	defer cancel()
	ev := api.Event{ID: id, Deliveries: []api.EventDelivery{}}
	var info EventInfo
	var known, stored bool
	if a.events != nil {
		var err error
		info, stored, err = a.events(ctx, id)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if stored {
			known = true
			ev.Type, ev.Size, ev.Seq = info.Type, &info.Size, info.Seq
			ev.Tenant, ev.Key, ev.ContentType = info.Tenant, info.Key, info.ContentType
			at := info.PublishedAt.UTC()
			ev.PublishedAt = &at
			withPayload(&ev, info.Data, a.showPayloads())
		}
	}
	if a.dlog != nil {
		recs, err := a.dlog.EventRecords(ctx, id)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		if len(recs) > 0 {
			known = true
			if ev.Type == "" {
				ev.Type, ev.Tenant = recs[0].EventType, recs[0].Tenant
			}
		}
		ev.Deliveries = deliveriesOf(recs)
	}
	if !known || !sameTenant(tenant, ev.Tenant) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("event %q: neither the event log nor the delivery log knows it", id))
		return
	}
	if stored {
		a.outcomes(&ev, info)
	}
	if tenant != "" {
		a.scopeDeliveries(&ev, EventInfo{Type: ev.Type, Tenant: ev.Tenant}, tenant)
	}
	writeEvent(w, &ev)
}

// deliveriesOf groups an event's records (oldest first) by endpoint and
// delivery ([attempt.Deliveries]).
func deliveriesOf(recs []attempt.Record) []api.EventDelivery {
	out := []api.EventDelivery{}
	for _, d := range attempt.Deliveries(recs) {
		out = append(out, api.EventDelivery{Endpoint: d.Endpoint, Delivery: d.ID, Number: d.Number, Trigger: d.Trigger, State: d.State, Attempts: d.Records})
	}
	return out
}

// logQuery reads the filters of the attempts routes; a bad one is answered
// with 400 naming it.
func (a *handler) logQuery(w http.ResponseWriter, r *http.Request, paged bool) (api.LogQuery, bool) {
	q := r.URL.Query()
	now := a.now()
	var lq api.LogQuery
	var err error
	if lq.Since, err = api.ParseTime(q.Get("since"), now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "since", "since: "+err.Error())
		return lq, false
	}
	if lq.Until, err = api.ParseTime(q.Get("until"), now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "until", "until: "+err.Error())
		return lq, false
	}
	if paged {
		lq.Limit = defaultPage
		if v := q.Get("limit"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxPage {
				writeFieldError(w, http.StatusBadRequest, "limit", fmt.Sprintf("limit: must be a number from 1 to %d", maxPage))
				return lq, false
			}
			lq.Limit = n
		}
		if v := q.Get("after"); v != "" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil || n == 0 {
				writeFieldError(w, http.StatusBadRequest, "after", "after: must be the next cursor of a previous page")
				return lq, false
			}
			lq.Before = n
		}
	}
	class, tenant, typ := q.Get("class"), q.Get("tenant"), q.Get("event_type")
	if class != "" && !attempt.ValidClass(class) {
		writeFieldError(w, http.StatusBadRequest, "class", fmt.Sprintf("class: must be one of %v, got %q", attempt.Classes, class))
		return lq, false
	}
	if class != "" || tenant != "" || typ != "" {
		lq.Match = func(rec *attempt.Record) bool {
			return (class == "" || rec.Class == class) && (tenant == "" || rec.Tenant == tenant) && (typ == "" || rec.EventType == typ)
		}
	}
	return lq, true
}

func (a *handler) endpointAttempts(w http.ResponseWriter, r *http.Request) {
	if a.logOff(w) {
		return
	}
	lq, ok := a.logQuery(w, r, true)
	if !ok {
		return
	}
	lq.Endpoint = r.PathValue("id")
	a.pageOf(w, r, lq, true)
}

// ownRecord reports whether rec is of the endpoint created at created (nil:
// a config-file endpoint) with tenant tenant: the same incarnation, or, for
// records that do not name theirs (stored before hookjet kept it), an
// attempt made after that endpoint was created; and an event the tenant may
// receive. An earlier endpoint with the id (deleted since) keeps its records
// to itself, and so does the tenant an endpoint had before it was moved to
// another (they stay in GET /api/v1/attempts?endpoint=<id>).
func ownRecord(rec *attempt.Record, created *time.Time, tenant string) bool {
	if tenant != "" && rec.Tenant != tenant {
		return false
	}
	if rec.EndpointCreatedAt != "" {
		return created != nil && rec.EndpointCreatedAt == created.UTC().Format(time.RFC3339Nano)
	}
	return created == nil || !rec.StartedAt.Before(*created)
}

func (a *handler) attempts(w http.ResponseWriter, r *http.Request) {
	if a.logOff(w) {
		return
	}
	lq, ok := a.logQuery(w, r, true)
	if !ok {
		return
	}
	lq.Endpoint = r.URL.Query().Get("endpoint")
	a.page(w, r, lq)
}

func (a *handler) page(w http.ResponseWriter, r *http.Request, lq api.LogQuery) {
	a.pageOf(w, r, lq, false)
}

// pageOf answers a page of attempts; with own, only those of the endpoint
// in force with id lq.Endpoint (a page may then hold fewer than its limit).
func (a *handler) pageOf(w http.ResponseWriter, r *http.Request, lq api.LogQuery, own bool) {
	if lq.Endpoint != "" && !api.ValidToken(lq.Endpoint) {
		writeFieldError(w, http.StatusBadRequest, "endpoint", fmt.Sprintf("endpoint: %q is not an endpoint id", lq.Endpoint))
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	recs, next, err := a.dlog.Page(ctx, lq)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if own {
		if ep, err := a.b.Endpoint(ctx, lq.Endpoint); err == nil {
			recs = slices.DeleteFunc(recs, func(rec attempt.Record) bool { return !ownRecord(&rec, ep.CreatedAt, ep.Tenant) })
		}
	}
	p := api.AttemptPage{Attempts: recs}
	if p.Attempts == nil {
		p.Attempts = []attempt.Record{}
	}
	if next > 0 {
		p.Next = strconv.FormatUint(next, 10)
	}
	writeJSON(w, http.StatusOK, p)
}

// exportFormat reads format=csv|jsonl (default csv).
func exportFormat(w http.ResponseWriter, r *http.Request) (string, bool) {
	switch f := r.URL.Query().Get("format"); f {
	case "", "csv":
		return "csv", true
	case "jsonl":
		return "jsonl", true
	default:
		writeFieldError(w, http.StatusBadRequest, "format", fmt.Sprintf("format: must be csv or jsonl, got %q", f))
		return "", false
	}
}

// attemptColumns are the CSV columns of an attempts export.
var attemptColumns = []string{"seq", "event_id", "event_type", "endpoint", "tenant", "attempt", "trigger", "started_at", "duration_ms", "status", "class", "reason", "error", "response"}

func attemptRow(rec *attempt.Record) []string {
	return []string{
		strconv.FormatUint(rec.Seq, 10), rec.EventID, rec.EventType, rec.Endpoint, rec.Tenant,
		strconv.Itoa(rec.Attempt), rec.Trigger, rec.StartedAt.UTC().Format(time.RFC3339Nano),
		strconv.FormatFloat(rec.DurationMS, 'f', -1, 64), strconv.Itoa(rec.Status), rec.Class, rec.Reason, rec.Error, rec.Response,
	}
}

// exporter writes rows as CSV (with a header row) or JSON lines.
type exporter struct {
	w     http.ResponseWriter
	csv   *csv.Writer
	enc   *json.Encoder
	n     int
	flush http.Flusher
}

func newExporter(w http.ResponseWriter, format, name string, header []string) (*exporter, error) {
	e := &exporter{w: w}
	e.flush, _ = w.(http.Flusher)
	if format == "jsonl" {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.jsonl"`)
		e.enc = json.NewEncoder(w)
		return e, nil
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	e.csv = csv.NewWriter(w)
	return e, e.csv.Write(header)
}

func (e *exporter) write(v any, row []string) error {
	e.n++
	var err error
	if e.enc != nil {
		err = e.enc.Encode(v)
	} else {
		err = e.csv.Write(row)
	}
	if err == nil && e.n%1000 == 0 {
		err = e.end()
	}
	return err
}

func (e *exporter) end() error {
	if e.csv != nil {
		e.csv.Flush()
		if err := e.csv.Error(); err != nil {
			return err
		}
	}
	if e.flush != nil {
		e.flush.Flush()
	}
	return nil
}

func (a *handler) exportAttempts(w http.ResponseWriter, r *http.Request) {
	if a.logOff(w) {
		return
	}
	format, ok := exportFormat(w, r)
	if !ok {
		return
	}
	lq, ok := a.logQuery(w, r, false)
	if !ok {
		return
	}
	lq.Endpoint = r.URL.Query().Get("endpoint")
	if lq.Endpoint != "" && !api.ValidToken(lq.Endpoint) {
		writeFieldError(w, http.StatusBadRequest, "endpoint", fmt.Sprintf("endpoint: %q is not an endpoint id", lq.Endpoint))
		return
	}
	e, err := newExporter(w, format, "attempts", attemptColumns)
	if err != nil {
		return
	}
	// The status is sent: a failure now can only cut the stream short.
	err = a.dlog.Export(r.Context(), lq, func(rec *attempt.Record) error { return e.write(rec, attemptRow(rec)) })
	if err == nil {
		err = e.end()
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		a.log.Warn("attempts export cut short", "err", err)
	}
}

// dlqColumns are the CSV columns of a dead-letter export.
var dlqColumns = []string{"seq", "event_id", "event_type", "endpoint", "reason", "attempts", "last_status", "last_error", "first_attempt", "last_attempt", "stored_at", "age_seconds"}

// DLQExport is one dead letter in a JSON-lines export.
type DLQExport struct {
	api.DLQEntry
	AgeSeconds float64 `json:"age_seconds"`
}

func (a *handler) exportDLQ(w http.ResponseWriter, r *http.Request) {
	format, ok := exportFormat(w, r)
	if !ok {
		return
	}
	q := r.URL.Query()
	now := a.now()
	f := api.DLQFilter{Endpoint: q.Get("endpoint")}
	var err error
	if f.Since, err = api.ParseTime(q.Get("since"), now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "since", "since: "+err.Error())
		return
	}
	if f.Until, err = api.ParseTime(q.Get("until"), now); err != nil {
		writeFieldError(w, http.StatusBadRequest, "until", "until: "+err.Error())
		return
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
	e, err := newExporter(w, format, "dead-letters", dlqColumns)
	if err != nil {
		return
	}
	for _, d := range entries {
		age := 0.0
		if t, err := time.Parse(time.RFC3339Nano, d.StoredAt); err == nil {
			age = now.Sub(t).Seconds()
		}
		row := []string{strconv.FormatUint(d.Seq, 10), d.EventID, d.EventType, d.Endpoint, d.Reason, strconv.Itoa(d.Attempts),
			strconv.Itoa(d.LastStatus), d.LastError, d.FirstAttempt, d.LastAttempt, d.StoredAt, strconv.FormatFloat(age, 'f', 0, 64)}
		if err := e.write(DLQExport{DLQEntry: d, AgeSeconds: float64(int64(age))}, row); err != nil {
			return
		}
	}
	_ = e.end()
}

// maxResponseLookups bounds the delivery-log lookups one DLQ listing makes.
const maxResponseLookups = 1000

// addResponses fills in each dead letter's last response excerpt from the
// delivery log, when it is on and holds the event's records.
func (a *handler) addResponses(ctx context.Context, entries []api.DLQEntry) {
	if a.dlog == nil {
		return
	}
	for i := range entries {
		if i >= maxResponseLookups || ctx.Err() != nil {
			return
		}
		recs, err := a.dlog.EventRecords(ctx, entries[i].EventID)
		if err != nil {
			return
		}
		for j := len(recs) - 1; j >= 0; j-- {
			if recs[j].Endpoint == entries[i].Endpoint && recs[j].Response != "" {
				entries[i].LastResponse = recs[j].Response
				break
			}
		}
	}
}

package admin

import (
	"context"
	"errors"
	"net/http"

	"github.com/hookjet/hookjet/api"
)

// EventTypes is the event-type catalogue the admin API manages
// (/api/v1/event-types). Its errors wrap api.ErrUnknownEventType (404),
// api.ErrEventTypeExists and api.ErrReadOnly (409), or are an
// *api.ProblemError naming the bad field (400).
type EventTypes interface {
	EventTypes(ctx context.Context) (api.EventTypeList, error)
	EventType(ctx context.Context, name string) (api.EventType, error)
	CreateEventType(ctx context.Context, t api.EventType) (api.EventType, error)
	UpdateEventType(ctx context.Context, name string, p api.EventTypePatch) (api.EventType, error)
	DeleteEventType(ctx context.Context, name string) error
}

// WithEventTypes serves /api/v1/event-types over c.
func WithEventTypes(c EventTypes) Option { return func(a *handler) { a.eventTypes = c } }

// routeEventTypes adds the catalogue's routes when there is one.
func (a *handler) routeEventTypes(mux *http.ServeMux) {
	if a.eventTypes == nil {
		return
	}
	mux.HandleFunc("GET /api/v1/event-types", a.listEventTypes)
	mux.HandleFunc("POST /api/v1/event-types", a.createEventType)
	mux.HandleFunc("GET /api/v1/event-types/{name}", a.getEventType)
	mux.HandleFunc("PATCH /api/v1/event-types/{name}", a.updateEventType)
	mux.HandleFunc("DELETE /api/v1/event-types/{name}", a.deleteEventType)
}

func (a *handler) listEventTypes(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := timeout(r)
	defer cancel()
	l, err := a.eventTypes.EventTypes(ctx)
	if err != nil {
		a.failEventType(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, l)
}

func (a *handler) getEventType(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := timeout(r)
	defer cancel()
	t, err := a.eventTypes.EventType(ctx, r.PathValue("name"))
	if err != nil {
		a.failEventType(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (a *handler) createEventType(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var t api.EventType
	if !decodeRequired(w, body, &t, `a JSON object is required: {"name", "description"?, "schema"?, "examples"?, "deprecated"?}`) {
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	t, err := a.eventTypes.CreateEventType(ctx, t)
	if err != nil {
		a.failEventType(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, t)
}

func (a *handler) updateEventType(w http.ResponseWriter, r *http.Request) {
	body, ok := readBody(w, r)
	if !ok {
		return
	}
	var p api.EventTypePatch
	if !decodeRequired(w, body, &p, `a JSON object is required: any of {"description", "schema", "examples", "deprecated"}`) {
		return
	}
	ctx, cancel := timeout(r)
	defer cancel()
	t, err := a.eventTypes.UpdateEventType(ctx, r.PathValue("name"), p)
	if err != nil {
		a.failEventType(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, t)
}

func (a *handler) deleteEventType(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := timeout(r)
	defer cancel()
	if err := a.eventTypes.DeleteEventType(ctx, r.PathValue("name")); err != nil {
		a.failEventType(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// failEventType answers an event-type call's error.
func (a *handler) failEventType(w http.ResponseWriter, r *http.Request, err error) {
	if pe, ok := errors.AsType[*api.ProblemError](err); ok {
		writeJSON(w, http.StatusBadRequest, api.Answer(pe.Problem))
		return
	}
	switch {
	case errors.Is(err, api.ErrUnknownEventType):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, api.ErrEventTypeExists):
		writeFieldError(w, http.StatusConflict, "name", err.Error())
	case errors.Is(err, api.ErrReadOnly), errors.Is(err, api.ErrConflict):
		writeError(w, http.StatusConflict, err.Error())
	default:
		a.fail(w, r, err)
	}
}

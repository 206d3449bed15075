package client

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/hookjet/hookjet/api"
)

// Error is an error answer of the API: its status and the server's
// {"error", "field"?, "errors"?}. Match it with errors.As; it wraps the api
// error kind of the answer where one maps ([Error.Unwrap]).
type Error struct {
	// Status is the HTTP status.
	Status int `json:"-"`
	// Message is the server's "error"; empty when the body was not the
	// API's error object.
	Message string `json:"error"`
	// Field names the (first) field, parameter or body the error is about.
	Field string `json:"field,omitempty"`
	// Errors lists every problem of a request, the first one as Message.
	Errors []FieldError `json:"errors,omitempty"`

	kind error
}

// FieldError is one problem of a request and the field it is about.
type FieldError struct {
	Field string `json:"field"`
	Error string `json:"error"`
}

func newError(status int, body []byte, notFound error) *Error {
	e := &Error{Status: status}
	_ = json.Unmarshal(body, e) // a body that is not the API's error leaves only the status
	switch {
	case status == http.StatusNotFound:
		e.kind = notFound
	case status == http.StatusBadRequest:
		e.kind = api.ErrBadRequest
	case status == http.StatusConflict && e.Field == "id":
		e.kind = api.ErrEndpointExists
	case status == http.StatusConflict && e.Field == "name":
		e.kind = api.ErrEventTypeExists
	case status == http.StatusConflict:
		e.kind = api.ErrConflict
	}
	return e
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("HTTP %d", e.Status)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.Message, e.Status)
}

// Unwrap is the api error kind of the answer: [api.ErrUnknownEndpoint] for
// a 404 of a route about one endpoint, [api.ErrBadRequest] for a 400,
// [api.ErrEndpointExists] for a 409 about the id (taken, or a config-file
// endpoint's), [api.ErrEventTypeExists] for a 409 about an event type's
// name, [api.ErrConflict] for another 409; nil otherwise.
func (e *Error) Unwrap() error { return e.kind }

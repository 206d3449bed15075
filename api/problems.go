package api

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Problem is one bad field of a request. Every 400 of the admin API, the
// publish API and the portal's session call answers an [ErrorAnswer] of
// them.
type Problem struct {
	// Field is the path of the field the problem is about: "url",
	// "retry.max_attempts", "headers.X-Api-Key", "events[2].data"; "body"
	// for the body as a whole.
	Field string `json:"field"`
	// Error says what is wrong, starting with the field ("url: ...").
	Error string `json:"error"`
}

// ErrorAnswer is the JSON of an error answer: Error says what went wrong;
// for bad input Field names the (first) field and Errors lists every
// problem, the first also in Error and Field.
type ErrorAnswer struct {
	Error  string    `json:"error"`
	Field  string    `json:"field,omitempty"`
	Errors []Problem `json:"errors,omitempty"`
}

// Answer is the error answer listing ps (at least one).
func Answer(ps ...Problem) ErrorAnswer {
	return ErrorAnswer{Error: ps[0].Error, Field: ps[0].Field, Errors: ps}
}

// FieldProblem is the problem msg of field, its message prefixed with the
// field: FieldProblem("ttl", "want a duration") is {"ttl", "ttl: want a
// duration"}.
func FieldProblem(field, msg string) Problem {
	return Problem{Field: field, Error: field + ": " + msg}
}

// DecodeProblem describes why a JSON body did not decode (an error of
// encoding/json's Unmarshal or Decoder.Decode) with the path of the field
// at fault and the JSON kinds involved, never a Go type name nor the value
// itself. empty is the message for an empty body (io.EOF).
func DecodeProblem(err error, empty string) Problem {
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		return FieldProblem(strings.Trim(name, `"`), "unknown field")
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		if te.Field == "" {
			return FieldProblem("body", "must be "+Kind(te.Type)+", got "+te.Value)
		}
		return FieldProblem(te.Field, "want "+Kind(te.Type)+", got "+te.Value)
	}
	if errors.Is(err, io.EOF) {
		return FieldProblem("body", empty)
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return FieldProblem("body", "invalid JSON at byte "+strconv.FormatInt(se.Offset, 10)+": "+strings.TrimPrefix(se.Error(), "json: "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return FieldProblem("body", "invalid JSON: unexpected end")
	}
	return FieldProblem("body", "invalid JSON: "+strings.TrimPrefix(err.Error(), "json: "))
}

// Kind names the JSON value a Go type decodes from, with its article:
// "a string", "a number", "true or false", "a list", "an object".
func Kind(t reflect.Type) string {
	if t == nil {
		return "a value"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a value"
}

package catalog

import "errors"

var (
	// ErrInvalid wraps a definition that cannot be put in the catalogue
	// (a bad name, a schema that does not compile, an example that fails
	// it); see [FieldError] for the field.
	ErrInvalid = errors.New("invalid event type")
)

// FieldError is a refused definition's problem: Field names the field
// ("name", "schema", "examples[1]") and Err says why. It wraps
// [ErrInvalid].
type FieldError struct {
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap returns ErrInvalid and the cause.
func (e *FieldError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

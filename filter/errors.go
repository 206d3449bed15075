package filter

import (
	"errors"
	"fmt"
)

// Sentinels, matched with errors.Is.
var (
	// ErrInvalid wraps every refusal of [Compile]; the error is a
	// *CompileError naming the field and the position.
	ErrInvalid = errors.New("invalid filter")
	// ErrCostLimit is an evaluation stopped past Limits.Cost.
	ErrCostLimit = errors.New("filter: cost limit per evaluation exceeded")
	// ErrBudget is an evaluation refused because the event's filters
	// already spent Limits.Budget.
	ErrBudget = errors.New("filter: cost budget of the event spent")
	// ErrEval wraps every other evaluation error (a missing field, a type
	// mismatch, a result that is not a bool).
	ErrEval = errors.New("filter: evaluation failed")
)

// Field is the endpoint key a filter is set under, named by every error.
const Field = "filter"

// CompileError is an expression Compile refused: the position of the first
// problem and why. Its message names the field: `filter: 1:7: ...`. It wraps
// [ErrInvalid].
type CompileError struct {
	// Line and Column locate the problem in the expression, from 1; a
	// problem of the whole expression (its type, its cost) is at 1:1.
	Line, Column int
	// Reason says what is wrong, without the position.
	Reason string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("%s: %d:%d: %s", Field, e.Line, e.Column, e.Reason)
}

// Unwrap returns ErrInvalid.
func (e *CompileError) Unwrap() error { return ErrInvalid }

package filter

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unique"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/cost"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/interpreter"
)

// MaxEstimatedCost is the largest estimated cost Compile accepts (DESIGN:
// 10,000), with every value sized by [Options].MaxPayloadBytes.
const MaxEstimatedCost = 10_000

// MaxExpressionBytes bounds an expression's source.
const MaxExpressionBytes = 4096

// Default limits at run time.
const (
	// DefaultCost stops one evaluation: MaxEstimatedCost, so an expression
	// Compile accepted is stopped only on a payload its estimate did not
	// foresee.
	DefaultCost = MaxEstimatedCost
	// DefaultBudget bounds what every filter of one event spends together:
	// enough for 10,000 endpoints' filters of cost 100 each.
	DefaultBudget = 1_000_000
)

// Options are what Compile needs to know. The zero value is usable.
type Options struct {
	// MaxPayloadBytes sizes every string, list and map of the estimate
	// (security.max_payload_bytes). Zero means 1 MiB.
	MaxPayloadBytes int
	// Cost stops one evaluation past it. Zero means DefaultCost.
	Cost uint64
}

// Filter is a compiled expression. It is immutable and safe for concurrent
// use; compile it once per endpoint version and keep it.
type Filter struct {
	src      string
	prg      cel.Program
	estimate uint64
	// memo keys this filter's outcome in an Event: the same expression
	// under the same cost limit yields the same outcome for one event.
	// A unique handle hashes as a pointer, not as the expression.
	memo unique.Handle[memoKey]
}

// Source returns the expression as written.
func (f *Filter) Source() string { return f.src }

// EstimatedCost returns the estimated maximum cost Compile computed.
func (f *Filter) EstimatedCost() uint64 { return f.estimate }

// The variables' names.
const (
	varType    = "type"
	varID      = "id"
	varTenant  = "tenant"
	varKey     = "key"
	varHeaders = "headers"
	varData    = "data"
)

var (
	envOnce sync.Once
	envVal  *cel.Env
	envErr  error
)

// env is the one CEL environment every filter is compiled in.
func env() (*cel.Env, error) {
	envOnce.Do(func() {
		envVal, envErr = cel.NewEnv(
			cel.Variable(varType, cel.StringType),
			cel.Variable(varID, cel.StringType),
			cel.Variable(varTenant, cel.StringType),
			cel.Variable(varKey, cel.StringType),
			cel.Variable(varHeaders, cel.MapType(cel.StringType, cel.StringType)),
			cel.Variable(varData, cel.DynType),
			cel.CrossTypeNumericComparisons(true),
			cel.OptionalTypes(),
			cel.ParserExpressionSizeLimit(MaxExpressionBytes),
			cel.ParserRecursionLimit(64),
		)
	})
	return envVal, envErr
}

// Compile parses, checks and estimates expr. It refuses, with a
// *CompileError wrapping [ErrInvalid], an empty or oversized expression, a
// syntax or type error, a result type other than bool, and an estimated cost
// over MaxEstimatedCost.
func Compile(expr string, opts Options) (*Filter, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, &CompileError{Line: 1, Column: 1, Reason: "is empty"}
	}
	if len(expr) > MaxExpressionBytes {
		return nil, &CompileError{Line: 1, Column: 1, Reason: fmt.Sprintf("is %d bytes, more than %d", len(expr), MaxExpressionBytes)}
	}
	e, err := env()
	if err != nil {
		return nil, fmt.Errorf("filter: environment: %w", err)
	}
	ast, iss := e.Compile(expr)
	if iss != nil && iss.Err() != nil {
		return nil, compileError(iss)
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		reason := fmt.Sprintf("yields %s, not bool", t)
		if t.IsExactType(types.DynType) {
			reason += ` (a field of data is dyn: compare it, e.g. data.flag == true)`
		}
		return nil, &CompileError{Line: 1, Column: 1, Reason: reason}
	}
	size := uint64(opts.MaxPayloadBytes)
	if size == 0 {
		size = 1 << 20
	}
	est, err := e.EstimateCost(ast, estimator{size: size})
	if err != nil {
		return nil, &CompileError{Line: 1, Column: 1, Reason: "cost: " + err.Error()}
	}
	if est.Max > MaxEstimatedCost {
		shown := "unbounded"
		if est.Max != math.MaxUint64 {
			shown = fmt.Sprint(est.Max)
		}
		return nil, &CompileError{Line: 1, Column: 1, Reason: fmt.Sprintf("estimated cost %s is over %d (with payloads up to %d bytes)", shown, MaxEstimatedCost, size)}
	}
	limit := opts.Cost
	if limit == 0 {
		limit = DefaultCost
	}
	prg, err := e.Program(ast,
		cel.CostLimit(limit),
		cel.EvalOptions(cel.OptOptimize),
	)
	if err != nil {
		return nil, fmt.Errorf("filter: program: %w", err)
	}
	return &Filter{src: expr, prg: prg, estimate: est.Max, memo: unique.Make(memoKey{src: expr, limit: limit})}, nil
}

// compileError turns the first of CEL's issues into a CompileError.
func compileError(iss *cel.Issues) error {
	errs := iss.Errors()
	if len(errs) == 0 {
		return &CompileError{Line: 1, Column: 1, Reason: iss.Err().Error()}
	}
	first := errs[0]
	loc := first.Location
	line, col := 1, 1
	if loc != nil && loc != common.NoLocation && loc.Line() > 0 {
		line, col = loc.Line(), loc.Column()+1
	}
	return &CompileError{Line: line, Column: col, Reason: first.Message}
}

// Bounds of the string variables, as the publish path enforces them
// (publish.MaxIDLen, publish.MaxKeyLen, config.MaxEventTypeLen,
// config.MaxTenantLen).
const (
	maxTypeLen   = 255
	maxIDLen     = 255
	maxKeyLen    = 255
	maxTenantLen = 1024
)

// estimator sizes the string variables by their bounds, and data and
// headers, with everything selected from them, by the largest payload.
type estimator struct{ size uint64 }

func (s estimator) EstimateSize(node cost.AstNode) *cost.SizeEstimate {
	path := node.Path()
	if len(path) == 0 {
		return nil
	}
	max := s.size
	switch path[0] {
	case varType:
		max = maxTypeLen
	case varID:
		max = maxIDLen
	case varKey:
		max = maxKeyLen
	case varTenant:
		max = maxTenantLen
	}
	sz := cost.SizeEstimate{Min: 0, Max: max}
	return &sz
}

func (estimator) EstimateCallCost(string, string, *cost.AstNode, []cost.AstNode) *cost.CallEstimate {
	return nil
}

// Match evaluates the filter over ev. It returns true only when the
// expression yields true; an evaluation that fails (a missing field, a type
// mismatch, a cost limit, the event's budget spent) is no match and returns
// its error (wrapping ErrEval, ErrCostLimit or ErrBudget) so that it can be
// counted.
//
// Endpoints whose filters have the same expression (and cost limit) share
// one evaluation per event: the first computes the outcome, the others read
// it without spending the budget again.
func (f *Filter) Match(ev *Event) (bool, error) {
	if o, ok := ev.outcome(f.memo); ok {
		return o.match, o.err
	}
	match, err := f.eval(ev)
	if !errors.Is(err, ErrBudget) {
		ev.remember(f.memo, outcome{match: match, err: err})
	}
	return match, err
}

// eval evaluates the filter over ev, spending ev's budget.
func (f *Filter) eval(ev *Event) (bool, error) {
	if ev.Spent() {
		return false, ErrBudget
	}
	val, det, err := f.prg.Eval(ev.act)
	if det != nil {
		if c := det.ActualCost(); c != nil {
			ev.spend(*c)
		}
	}
	if err != nil {
		var cancelled interpreter.EvalCancelledError
		if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
			return false, ErrCostLimit
		}
		return false, fmt.Errorf("%w: %w", ErrEval, err)
	}
	b, ok := val.Value().(bool)
	if !ok {
		return false, fmt.Errorf("%w: yields %s, not bool", ErrEval, val.Type())
	}
	return b, nil
}

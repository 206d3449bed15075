package filter

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"unique"

	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// Input is what an event offers its filters.
type Input struct {
	// Type, ID, Tenant and Key are the event's type, id, tenant and
	// ordering key; "" when absent.
	Type, ID, Tenant, Key string
	// Headers are the publisher's message headers; their names are
	// lower-cased for the filters, several values joined with ", ". Nil
	// means none.
	Headers map[string][]string
	// Data is the payload. It is parsed as JSON at most once, by the first
	// filter that reads data; a payload that is not JSON is null.
	Data []byte
}

// Limits bound what filters spend at run time. The zero value means the
// defaults.
type Limits struct {
	// Budget is what every filter of one event spends together, in CEL
	// cost units; past it the remaining filters are not evaluated (no
	// match, ErrBudget). Zero means DefaultBudget.
	Budget uint64
}

// Event is one event as every endpoint's filter sees it. Build one per event
// with [NewEvent] and pass it to each [Filter.Match]: the payload is parsed
// once, on first use, and the budget is shared. It is safe for concurrent use.
type Event struct {
	in Input
	// typ, id, tenant and key are in's strings as CEL values, made once
	// per event rather than at each evaluation that reads them.
	typ, id, tenant, key ref.Val

	headerOnce sync.Once
	headers    ref.Val

	once sync.Once
	data ref.Val
	// parses counts the payload's parses, for tests and benchmarks.
	parses atomic.Int32

	left atomic.Int64

	// act resolves the variables of every evaluation of this event.
	act activation

	mu       sync.Mutex
	outcomes map[unique.Handle[memoKey]]outcome
}

// memoKey names an evaluation's outcome within one event: an expression
// under a cost limit.
type memoKey struct {
	src   string
	limit uint64
}

// outcome is what one evaluation answered.
type outcome struct {
	match bool
	err   error
}

// outcome returns what an earlier evaluation of k answered for this event.
func (ev *Event) outcome(k unique.Handle[memoKey]) (outcome, bool) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	o, ok := ev.outcomes[k]
	return o, ok
}

// remember keeps o as k's outcome for this event.
func (ev *Event) remember(k unique.Handle[memoKey], o outcome) {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	if ev.outcomes == nil {
		ev.outcomes = make(map[unique.Handle[memoKey]]outcome)
	}
	ev.outcomes[k] = o
}

// NewEvent returns the event the filters of in's endpoints share.
func NewEvent(in Input, lim Limits) *Event {
	budget := lim.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	ev := &Event{in: in, typ: types.String(in.Type), id: types.String(in.ID), tenant: types.String(in.Tenant), key: types.String(in.Key)}
	ev.left.Store(int64(min(budget, 1<<62)))
	ev.act = activation{ev: ev}
	return ev
}

// Parses returns how many times the payload was parsed: 0 or 1.
func (ev *Event) Parses() int { return int(ev.parses.Load()) }

// Spent reports whether the event's budget is spent.
func (ev *Event) Spent() bool { return ev.left.Load() <= 0 }

// spend takes c from the budget.
func (ev *Event) spend(c uint64) { ev.left.Add(-int64(min(c, 1<<62))) }

// dataVal returns the payload as CEL sees it: parsed once, null when not JSON.
func (ev *Event) dataVal() ref.Val {
	ev.once.Do(func() {
		ev.parses.Add(1)
		var v any
		if len(ev.in.Data) == 0 || json.Unmarshal(ev.in.Data, &v) != nil {
			ev.data = types.NullValue
			return
		}
		ev.data = celValue(v)
	})
	return ev.data
}

// celValue converts a decoded JSON value into CEL values all the way down,
// once per event: a map or list of native values would convert an element
// again at every evaluation that reads it.
func celValue(v any) ref.Val {
	switch v := v.(type) {
	case nil:
		return types.NullValue
	case bool:
		return types.Bool(v)
	case float64:
		return types.Double(v)
	case string:
		return types.String(v)
	case []any:
		elems := make([]ref.Val, len(v))
		for i, e := range v {
			elems[i] = celValue(e)
		}
		return types.NewRefValList(types.DefaultTypeAdapter, elems)
	case map[string]any:
		m := make(map[string]ref.Val, len(v))
		for k, e := range v {
			m[k] = celValue(e)
		}
		return types.NewMap(types.DefaultTypeAdapter, m)
	}
	return types.DefaultTypeAdapter.NativeToValue(v)
}

// headerVal returns the headers as a CEL map, made once.
func (ev *Event) headerVal() ref.Val {
	ev.headerOnce.Do(ev.makeHeaders)
	return ev.headers
}

func (ev *Event) makeHeaders() {
	joined := make(map[string]string, len(ev.in.Headers))
	for k, vs := range ev.in.Headers {
		k = strings.ToLower(k)
		if prev, ok := joined[k]; ok {
			joined[k] = prev + ", " + strings.Join(vs, ", ")
			continue
		}
		joined[k] = strings.Join(vs, ", ")
	}
	m := make(map[string]ref.Val, len(joined))
	for k, v := range joined {
		m[k] = types.String(v)
	}
	ev.headers = types.NewMap(types.DefaultTypeAdapter, m)
}

// activation resolves the variables of one evaluation, each when the
// expression first asks for it: a filter that never reads data never parses
// the payload.
type activation struct{ ev *Event }

func (a activation) ResolveName(name string) (any, bool) {
	switch name {
	case varType:
		return a.ev.typ, true
	case varID:
		return a.ev.id, true
	case varTenant:
		return a.ev.tenant, true
	case varKey:
		return a.ev.key, true
	case varHeaders:
		return a.ev.headerVal(), true
	case varData:
		return a.ev.dataVal(), true
	}
	return nil, false
}

func (activation) Parent() interpreter.Activation { return nil }

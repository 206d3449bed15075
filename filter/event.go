package filter

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"

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

	headerOnce sync.Once
	headers    ref.Val

	once sync.Once
	data ref.Val
	// parses counts the payload's parses, for tests and benchmarks.
	parses atomic.Int32

	left atomic.Int64
}

// NewEvent returns the event the filters of in's endpoints share.
func NewEvent(in Input, lim Limits) *Event {
	budget := lim.Budget
	if budget == 0 {
		budget = DefaultBudget
	}
	ev := &Event{in: in}
	ev.left.Store(int64(min(budget, 1<<62)))
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
		ev.data = types.DefaultTypeAdapter.NativeToValue(v)
	})
	return ev.data
}

// headerVal returns the headers as a CEL map, made once.
func (ev *Event) headerVal() ref.Val {
	ev.headerOnce.Do(ev.makeHeaders)
	return ev.headers
}

func (ev *Event) makeHeaders() {
	m := make(map[string]string, len(ev.in.Headers))
	for k, vs := range ev.in.Headers {
		k = strings.ToLower(k)
		if prev, ok := m[k]; ok {
			m[k] = prev + ", " + strings.Join(vs, ", ")
			continue
		}
		m[k] = strings.Join(vs, ", ")
	}
	ev.headers = types.DefaultTypeAdapter.NativeToValue(m)
}

// activation resolves the variables of one evaluation, each when the
// expression first asks for it: a filter that never reads data never parses
// the payload.
type activation struct{ ev *Event }

func (a activation) ResolveName(name string) (any, bool) {
	switch name {
	case varType:
		return a.ev.in.Type, true
	case varID:
		return a.ev.in.ID, true
	case varTenant:
		return a.ev.in.Tenant, true
	case varKey:
		return a.ev.in.Key, true
	case varHeaders:
		return a.ev.headerVal(), true
	case varData:
		return a.ev.dataVal(), true
	}
	return nil, false
}

func (activation) Parent() interpreter.Activation { return nil }

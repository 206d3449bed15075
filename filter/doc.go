// Package filter holds an endpoint's payload filter: a CEL expression
// (cel.dev/cel-go) over the event that says whether the endpoint receives it.
//
// The expression sees these variables:
//
//	type     string               the event type
//	id       string               the event id
//	tenant   string               the event's tenant ("" when absent)
//	key      string               the event's ordering key ("" when absent)
//	headers  map(string, string)  the publisher's message headers, names lower-cased
//	data     dyn                  the JSON payload (numbers are doubles); null when it is not JSON
//
// Numeric comparisons cross types, so data.amount > 1000 works on a double.
// A missing field is an evaluation error, which is no match: guard with
// has(data.x) or the optional syntax data.?x.orValue("").
//
// [Compile] refuses an expression whose syntax is wrong, whose checked type is
// not bool (data.flag is dyn: write data.flag == true), or whose estimated cost
// passes [MaxEstimatedCost] with every string, list and map sized by the
// largest payload; each error names the field "filter" and the line:column.
//
// At run time an evaluation stops past [Limits].Cost, and every filter of
// one event together spends at most [Limits].Budget. An [Event] is built once
// per event and shared by every endpoint's [Filter.Match]: it parses the
// payload at most once, on the first filter that reads data, and keeps the
// budget they share.
//
// The package imports neither NATS nor HTTP; the engine's match stage calls it.
package filter

// Package catalog holds the event-type catalogue: each event type's name,
// description, JSON Schema (draft 2020-12, compiled with
// santhosh-tekuri/jsonschema/v6), examples and deprecation, and the check
// of a payload against its type's schema.
//
// [Compile] refuses a definition whose schema does not compile (naming the
// field schema and why) or whose examples fail their own schema (naming
// examples[i]). [Type.Validate] returns every problem of a payload, each
// naming a JSON pointer into it and why ("/amount: want number, got
// string"). A schema of the common keywords also gets a fast path
// (fast.go) that passes a valid payload straight from its bytes; any other
// payload goes to the library, so the problems are the library's.
//
// A [Catalog] is an immutable snapshot of the types in force with the
// validation [Mode] and strictness; [Live] holds the current one for
// concurrent readers (the publish paths, the fan-out's match stage) and is
// swapped whole when anything changes. [Builtin] are the operational event
// types hookjet itself publishes, read-only.
//
// The package imports neither NATS nor HTTP.
package catalog

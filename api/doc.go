// Package api is the admin API's vocabulary: the request and answer types
// of its routes (endpoint status and its held ordering keys, summary,
// waits, replay, dead letters, the stored events' list ([EventQuery],
// [EventPage]) and view ([Event]), the delivery log's pages, settings and
// last-test views, the durability /readyz reports; the publish API's body
// and answer, [PublishEvent], [PublishBatch] and [PublishResult]; the
// event-type catalogue, [EventType], [EventTypePatch], [EventTypeList]),
// its error kinds ([ErrUnknownEndpoint], [ErrBadRequest],
// [ErrEndpointExists], [ErrConflict], [ErrUnknownEventType],
// [ErrEventTypeExists], [ErrReadOnly], [ProblemError]) and its time parameters ([ParseTime]). Their JSON is part
// of the user contract
// (docs/api.md).
//
// It imports the standard library and package attempt only, so that every
// room that speaks the API can import it without importing another: the
// delivery engine (dispatch) fills the answers in, package admin serves
// them and maps the error kinds to HTTP statuses, jetstream fills in the
// dead letters and reads the delivery log's queries, package publish
// answers POST /api/v1/events, and the commands (cli, client) read the
// answers. openapi.json, embedded ([OpenAPI]), is the OpenAPI 3.1 document
// of the admin and publish APIs.
package api

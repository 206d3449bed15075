// Package transform runs an endpoint's transformation: a JavaScript function
// (github.com/dop251/goja, pure Go) shaped like Svix's,
//
//	function handler(webhook) {
//	  webhook.payload = {text: "order " + webhook.payload.id};
//	  return webhook;
//	}
//
// that receives
//
//	{eventType, event: {id, type, tenant, key}, payload, url, headers: {}, cancel: false}
//
// and returns it. payload is the event's JSON payload as a value (JSON.parse;
// numbers are doubles), or a string when the payload is not JSON. The script
// may change payload (a JSON value is sent as application/json, a string as
// is with the publisher's Content-Type), url (an absolute http or https URL,
// for destinations that have one; the SSRF guard still applies when it is
// sent), add headers (they override the endpoint's configured ones, which the
// script never sees; webhook-*, hookjet-*, nats-*, Authorization, Host and
// Content-Length cannot be set) or set cancel (no delivery).
//
// The sandbox: no network, files, timers or modules (goja has none, and
// source maps are never loaded); each run is interrupted after
// [Limits].Timeout, and by a watchdog once the heap grew by more than
// [Limits].MaxMemory since it began; regular expressions that need
// backtracking stop matching after [RegexpTimeout]; the call stack is bounded;
// the output is at most [Limits].MaxOutputBytes; scripts are at most
// [MaxScriptBytes]. A runtime only ever runs one version of one endpoint's
// script: an [Engine] pools runtimes per endpoint and script version and
// drops a runtime after any failed run. At most [Options].Concurrency runs go
// at once.
//
// A script that throws, is interrupted or returns something else than the
// webhook object yields an *Error with the script's message and its
// line:column; the engine dead-letters the delivery with reason transform,
// which is not an attempt. The package imports neither NATS nor HTTP.
package transform

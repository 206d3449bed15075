// Package server is a running hookjet: the process 'hookjet serve' is.
// [Start] opens the state file, starts or joins NATS (jetstream), creates
// the streams, starts the delivery engine (dispatch) and the endpoint
// watches, the delivery log's writer, the in-process outbox relay, the
// inbound gateway and the admin API with the console and the portal, in
// that order, each phase named on /readyz while it runs ([Server]).
// [Server.Shutdown] stops them in the reverse order within the grace
// period; [Server.Reload] applies a new config file's endpoints.
//
// [RunRelay] is the standalone outbox relay ('hookjet outbox'). The
// package turns no arguments into calls: package cli does that, and the
// end-to-end tests, hookjettest and the bench call [Start] themselves.
// [Version] is set at build time.
package server

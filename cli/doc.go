// Package cli is the hookjet command line: it turns arguments into calls.
// `serve` and `outbox` parse their flags and the config file and hand the
// process to package server; publish, listen, inbound test, version and the
// operator commands (status, endpoints, dlq, events, export) talk to NATS
// through jetstream or to the admin API over HTTP, reading its answers with
// package api's types. cmd/hookjet only wires [Main] to the process, so
// tests run the whole program in-process; [Start] is the in-process entry
// of the end-to-end tests.
package cli

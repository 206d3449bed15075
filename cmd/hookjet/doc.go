// Command hookjet delivers webhooks from NATS JetStream. See `hookjet --help`.
//
// main only wires package cli's Main to the process (arguments, environment,
// signals, exit codes); the commands are package cli and the running
// process is package server.
package main

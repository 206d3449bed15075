// Package orderservice is an example application that sends webhooks
// through hookjet: placing an order publishes order.created to JetStream,
// and hookjet delivers it, signed, to every endpoint subscribed to it. Its
// test (orderservice_test.go) shows how an application proves that with
// package hookjettest, using nothing but hookjet's public API.
package orderservice

// Package apicheck holds the tests to the OpenAPI document of the admin
// and publish APIs (api.OpenAPI): [Transport] validates every request a
// test makes to /api/v1/... and the answer it gets with
// github.com/pb33f/libopenapi-validator, so that a route, parameter or
// field that drifts from the document fails the test that used it.
//
// The end-to-end tests (package test) install it as http.DefaultTransport
// in TestMain ([Install]); hookjettest's tests pass it as the transport of
// their API client. Only tests import it: the binary does not carry the
// validator.
package apicheck

package hookjettest

import "net/http"

// SetAPITransport makes every Hookjet started from now on call the admin
// API through the transport fn returns (TestMain: one that validates the
// calls against the OpenAPI document).
func SetAPITransport(fn func() http.RoundTripper) { apiTransport = fn }
